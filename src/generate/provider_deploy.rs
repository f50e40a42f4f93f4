//! An integration's settings where its worker is deployed. A worker whose loop builds a
//! provider's client does not start without `<NAME>_<PROVIDER>_IMPL` (and, calling the
//! provider, its base URL), so every Terraform instance of the worker is given them:
//!
//! - the environment module gets two variables, `<provider>_base_url` and
//!   `<provider>_token_secret_arn` (the Secrets Manager secret of the token: a secret, never a
//!   plain setting), passed through from the account (the root module), whose deploy
//!   workflows read them from the repository's variables (`<PROVIDER>_BASE_URL`,
//!   `<PROVIDER>_TOKEN_SECRET_ARN`);
//! - `local.<provider>` (`IMPL = "http"`, the base URL) and `local.<provider>_secrets` (the
//!   token) are merged into the `environment` and `secrets` of each instance of the worker —
//!   its own and every lane replica's — and the secret joins what ECS may read.
//!
//! Each edit is made once (a second run finds it) and keeps `terraform fmt`'s layout.

use hcl_edit::Span;
use hcl_edit::structure::{Block, Body, Structure};

use super::error::GenerateError;
use super::names;
use super::plan::Plan;
use crate::layout::{
    PRODUCTION, STAGING, TF_ACCOUNT, TF_ACCOUNT_VARS, TF_ENVIRONMENT, TF_ENVIRONMENT_VARS,
};

/// Wires the settings of every provider `worker`'s loop builds a client of into each place
/// the worker is deployed.
pub fn plan(plan: &mut Plan, name: &str, worker: &str) -> Result<(), GenerateError> {
    for provider in providers(plan, name, worker)? {
        let p = names::snake(&provider);
        let var = format!("{}_{}", names::shouty(name), names::shouty(&provider));
        let Some(main) = plan.text(TF_ENVIRONMENT)? else {
            // A repository without Terraform deploys elsewhere: nothing to wire.
            continue;
        };
        for path in [TF_ENVIRONMENT_VARS, TF_ACCOUNT_VARS] {
            variables(plan, path, &provider, &p, &var)?;
        }
        let main = locals(&main, &provider, &p, &var);
        let main = read_secret(&main, &p)?;
        let main = instances(&main, worker, &p)?;
        plan.edit(TF_ENVIRONMENT, main)?;
        pass_through(plan, &p)?;
        for workflow in [STAGING, PRODUCTION] {
            workflow_vars(plan, workflow, &p)?;
        }
    }
    Ok(())
}

pub(crate) fn refused(path: &str, what: &str) -> GenerateError {
    GenerateError::Unwirable {
        path: path.to_owned(),
        what: what.to_owned(),
    }
}

/// The two variables, appended to `path` when it lacks them.
fn variables(
    plan: &mut Plan,
    path: &str,
    provider: &str,
    p: &str,
    var: &str,
) -> Result<(), GenerateError> {
    let Some(text) = plan.text(path)? else {
        return Err(refused(path, "the variables of the provider's settings"));
    };
    if text.contains(&format!("variable \"{p}_base_url\"")) {
        return Ok(());
    }
    let sep = if text.ends_with('\n') { "\n" } else { "\n\n" };
    let added = format!(
        "{sep}variable \"{p}_base_url\" {{\n  \
         description = \"The {provider} provider's base URL ({var}_BASE_URL).\"\n  \
         type        = string\n}}\n\n\
         variable \"{p}_token_secret_arn\" {{\n  \
         description = \"The Secrets Manager secret holding the {provider} provider's token ({var}_TOKEN; an empty string when it takes none).\"\n  \
         type        = string\n}}\n"
    );
    plan.edit(path, format!("{text}{added}"))
}

/// `local.<p>` and `local.<p>_secrets`, appended once.
fn locals(main: &str, provider: &str, p: &str, var: &str) -> String {
    if main.contains(&format!("  {p} = {{")) || main.contains(&format!("  {p}_secrets ")) {
        return main.to_owned();
    }
    let (impl_key, url_key) = (format!("{var}_IMPL"), format!("{var}_BASE_URL"));
    let width = url_key.len();
    let sep = if main.ends_with('\n') { "\n" } else { "\n\n" };
    // `terraform fmt` aligns no attribute whose value spans lines with its neighbours.
    format!(
        "{main}{sep}# The {provider} provider (integrations/{provider}): the settings of every instance of a\n\
         # worker whose loop builds its client, which does not start without them.\n\
         locals {{\n  \
         {p} = {{\n    \
         {impl_key:<width$} = \"http\"\n    \
         {url_key:<width$} = var.{p}_base_url\n  }}\n  \
         {p}_secrets = {{ {var}_TOKEN = var.{p}_token_secret_arn }}\n}}\n"
    )
}

/// Adds the token's secret to what the tasks' execution role may read.
fn read_secret(main: &str, p: &str) -> Result<String, GenerateError> {
    read_secret_arn(main, &format!("var.{p}_token_secret_arn"))
}

/// Adds the secret `arn` (an expression) to what the tasks' execution role may read.
pub(crate) fn read_secret_arn(main: &str, arn: &str) -> Result<String, GenerateError> {
    let body = parse(main, TF_ENVIRONMENT)?;
    let statement = blocks(&body, "data")
        .find(|b| {
            b.labels
                .get(1)
                .is_some_and(|l| l.as_str() == "read_secrets")
        })
        .and_then(|b| blocks(&b.body, "statement").next());
    let Some(resources) = statement.and_then(|s| s.body.get_attribute("resources")) else {
        return Err(refused(
            TF_ENVIRONMENT,
            "the secrets the execution role reads (`data \"aws_iam_policy_document\" \"read_secrets\"`)",
        ));
    };
    let Some(span) = resources.value.span() else {
        return Err(refused(TF_ENVIRONMENT, "the read_secrets resources"));
    };
    let value = &main[span.clone()];
    if value.contains(arn) {
        return Ok(main.to_owned());
    }
    let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) else {
        return Err(refused(
            TF_ENVIRONMENT,
            "the read_secrets resources (a list written as `[…]`)",
        ));
    };
    let inner = inner.trim_end().trim_end_matches(',');
    Ok(format!(
        "{}[{inner}, {arn}]{}",
        &main[..span.start],
        &main[span.end..]
    ))
}

/// Merges `local.<p>` into the `environment`, and `local.<p>_secrets` into the `secrets`, of
/// each module instance of `worker`.
fn instances(main: &str, worker: &str, p: &str) -> Result<String, GenerateError> {
    let body = parse(main, TF_ENVIRONMENT)?;
    // (offset, text to insert or the range it replaces), applied from the end.
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for block in blocks(&body, "module") {
        if crate::layout::terraform::block_worker(block).as_deref() != Some(worker) {
            continue;
        }
        for (attr, local) in [
            ("environment", p.to_owned()),
            ("secrets", format!("{p}_secrets")),
        ] {
            let reference = format!("local.{local}");
            match block.body.get_attribute(attr) {
                Some(a) => {
                    let Some(span) = a.value.span() else {
                        return Err(refused(TF_ENVIRONMENT, "a worker's settings"));
                    };
                    let value = &main[span.clone()];
                    if !value.contains(&reference) {
                        edits.push((span, format!("merge({value}, {reference})")));
                    }
                }
                None => {
                    let at = insert_line(main, block).ok_or_else(|| {
                        refused(
                            TF_ENVIRONMENT,
                            "a worker's module block (its closing brace)",
                        )
                    })?;
                    let width = key_width(main, block).unwrap_or(attr.len());
                    edits.push((at..at, format!("  {attr:<width$} = {reference}\n")));
                }
            }
        }
    }
    edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    let mut out = main.to_owned();
    for (range, text) in edits {
        out.replace_range(range, &text);
    }
    Ok(out)
}

/// Where a new attribute line goes in `block`: the start of its closing brace's line.
pub(crate) fn insert_line(main: &str, block: &Block) -> Option<usize> {
    let span = block.span()?;
    let close = main[..span.end].rfind('}')?;
    let line = main[..close].rfind('\n').map_or(0, |i| i + 1);
    main[line..close].trim().is_empty().then_some(line)
}

/// The width keys are padded to in `block` (`terraform fmt` aligns the `=` of a run of
/// attributes): that of its last attribute line.
fn key_width(main: &str, block: &Block) -> Option<usize> {
    let last = block
        .body
        .iter()
        .filter_map(|s| match s {
            Structure::Attribute(a) => a.span(),
            Structure::Block(_) => None,
        })
        .max_by_key(|r| r.start)?;
    let line_start = main[..last.start].rfind('\n').map_or(0, |i| i + 1);
    let line = &main[line_start..];
    let eq = line.find('=')?;
    let key = line[..eq].trim_start();
    Some(key.len().saturating_sub(1).max(key.trim_end().len()))
}

/// The account passes the two variables to the environment module.
fn pass_through(plan: &mut Plan, p: &str) -> Result<(), GenerateError> {
    let Some(text) = plan.text(TF_ACCOUNT)? else {
        return Err(refused(TF_ACCOUNT, "the environment module's instance"));
    };
    let key = format!("{p}_base_url");
    let body = parse(&text, TF_ACCOUNT)?;
    let Some(block) = blocks(&body, "module").find(|b| {
        b.labels
            .first()
            .is_some_and(|l| l.as_str() == "environment")
    }) else {
        return Err(refused(TF_ACCOUNT, "module \"environment\""));
    };
    if block.body.get_attribute(&key).is_some() {
        return Ok(());
    }
    let at = insert_line(&text, block)
        .ok_or_else(|| refused(TF_ACCOUNT, "module \"environment\" (its closing brace)"))?;
    let token = format!("{p}_token_secret_arn");
    let width = token.len();
    // A blank line first: `terraform fmt` aligns the new pair apart from the lines above.
    let lines = format!("\n  {key:<width$} = var.{key}\n  {token} = var.{token}\n");
    let mut out = text.clone();
    out.insert_str(at, &lines);
    plan.edit(TF_ACCOUNT, out)
}

/// The deploy workflow hands Terraform the two variables, from the repository's variables,
/// beside the queue's secret.
fn workflow_vars(plan: &mut Plan, path: &str, p: &str) -> Result<(), GenerateError> {
    let Some(text) = plan.text(path)? else {
        return Ok(());
    };
    let anchor = "TF_VAR_database_url_secret_arn:";
    if text.contains(&format!("TF_VAR_{p}_base_url:")) {
        return Ok(());
    }
    let Some(at) = text.find(anchor) else {
        return Err(refused(
            path,
            "the Terraform variables of the apply job (`TF_VAR_database_url_secret_arn:`)",
        ));
    };
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let indent = &text[line_start..at];
    let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
    let up = p.to_ascii_uppercase();
    let added = format!(
        "{indent}TF_VAR_{p}_base_url: ${{{{ vars.{up}_BASE_URL }}}}\n\
         {indent}TF_VAR_{p}_token_secret_arn: ${{{{ vars.{up}_TOKEN_SECRET_ARN }}}}\n"
    );
    let mut out = text.clone();
    out.insert_str(line_end, &added);
    plan.edit(path, out)
}

pub(crate) fn parse(text: &str, path: &str) -> Result<Body, GenerateError> {
    hcl_edit::parser::parse_body(text).map_err(|e| GenerateError::Unwirable {
        path: path.to_owned(),
        what: format!(
            "the file, which does not parse as HCL (line {}: {})",
            e.location().line(),
            e.message().lines().next().unwrap_or_default()
        ),
    })
}

pub(crate) fn blocks<'b>(body: &'b Body, ident: &'b str) -> impl Iterator<Item = &'b Block> + 'b {
    body.iter().filter_map(move |s| match s {
        Structure::Block(b) if b.ident.as_str() == ident => Some(b),
        _ => None,
    })
}

/// The providers whose client `worker`'s loop builds (`<name>_<provider>_integration::
/// <Provider>Client::from_env`), by their crate's `<provider>` (snake case).
pub fn providers(plan: &Plan, name: &str, worker: &str) -> Result<Vec<String>, GenerateError> {
    let work_loop = plan
        .text(&crate::layout::work_loop(worker))?
        .unwrap_or_default();
    let prefix = format!("{}_", names::snake(name));
    Ok(crate::layout::work_loop::client_crates(&work_loop)
        .into_iter()
        .filter_map(|krate| {
            let provider = krate.strip_prefix(&prefix)?.strip_suffix("_integration")?;
            Some(provider.to_owned())
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAIN: &str = "locals {\n  queue = { ACME_DATABASE_URL = var.db }\n}\n\n\
        data \"aws_iam_policy_document\" \"read_secrets\" {\n  statement {\n    actions   = [\"secretsmanager:GetSecretValue\"]\n    resources = [var.db]\n  }\n}\n\n\
        module \"maintenance\" {\n  source       = \"../service\"\n  name         = \"maintenance\"\n  metrics_port = 9100\n  environment  = { ACME_WORKER_LANE = \"default\" }\n  secrets      = local.queue\n}\n\n\
        module \"billing\" {\n  source       = \"../service\"\n  name         = \"billing\"\n  worker       = \"billing\"\n  metrics_port = 9103\n  secrets      = local.queue\n}\n";

    #[test]
    fn each_instance_of_the_worker_gets_the_settings_once() {
        let once = instances(MAIN, "billing", "carrier").expect("edits");
        assert!(
            once.contains("  environment  = local.carrier\n}\n"),
            "{once}"
        );
        assert!(
            once.contains(
                "  secrets      = merge(local.queue, local.carrier_secrets)\n  environment"
            ),
            "{once}"
        );
        assert!(once.contains("  environment  = { ACME_WORKER_LANE = \"default\" }\n  secrets      = local.queue\n"), "maintenance untouched: {once}");
        assert_eq!(instances(&once, "billing", "carrier").expect("again"), once);
        let m = instances(MAIN, "maintenance", "carrier").expect("edits");
        assert!(
            m.contains("environment  = merge({ ACME_WORKER_LANE = \"default\" }, local.carrier)"),
            "{m}"
        );
    }

    #[test]
    fn the_secret_is_readable_and_the_locals_are_written_once() {
        let read = read_secret(MAIN, "carrier").expect("edits");
        assert!(
            read.contains("resources = [var.db, var.carrier_token_secret_arn]"),
            "{read}"
        );
        assert_eq!(read_secret(&read, "carrier").expect("again"), read);
        let l = locals(MAIN, "carrier", "carrier", "ACME_CARRIER");
        assert!(l.contains("  carrier = {\n    ACME_CARRIER_IMPL     = \"http\"\n    ACME_CARRIER_BASE_URL = var.carrier_base_url\n  }\n  carrier_secrets = { ACME_CARRIER_TOKEN = var.carrier_token_secret_arn }\n"), "{l}");
        assert_eq!(locals(&l, "carrier", "carrier", "ACME_CARRIER"), l);
    }
}
