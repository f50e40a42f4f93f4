//! Names the generator accepts, validated before anything reaches a path or a template
//! (docs/reference.md#the-generator), and the case conversions templates use (heck).

use heck::{ToShoutySnakeCase, ToSnakeCase, ToUpperCamelCase};

use super::error::GenerateError;

/// Keywords of Rust 2024 (strict, reserved and weak ones that cannot name a module).
const RUST_KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "static", "struct", "super", "trait", "true", "try", "type", "typeof",
    "union", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// What a name names, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    Project,
    Worker,
    Kind,
    Namespace,
    Lane,
    Provider,
}

impl NameKind {
    pub fn label(self) -> &'static str {
        match self {
            NameKind::Project => "project name",
            NameKind::Worker => "worker name",
            NameKind::Kind => "kind",
            NameKind::Namespace => "namespace",
            NameKind::Lane => "lane",
            NameKind::Provider => "provider name",
        }
    }

    fn rule(self) -> &'static str {
        match self {
            NameKind::Project | NameKind::Worker | NameKind::Lane | NameKind::Provider => {
                "lower-case letters, digits and single hyphens, starting with a letter, at most 41 characters (e.g. `billing`, `order-sync`)"
            }
            NameKind::Kind => {
                "upper-case letters, digits and single underscores, starting with a letter, at most 64 characters (e.g. `NOTIFY_SHIPMENT`)"
            }
            NameKind::Namespace => {
                "lower-case letters, digits and single underscores, starting with a letter, at most 41 characters, not a Rust keyword (e.g. `shipping`)"
            }
        }
    }
}

fn invalid(kind: NameKind, name: &str, reason: impl Into<String>) -> GenerateError {
    GenerateError::InvalidName {
        what: kind.label(),
        name: name.to_owned(),
        reason: reason.into(),
        rule: kind.rule(),
    }
}

/// Checks `name` against the rule for `kind`; the error says what is wrong with it.
pub fn validate(kind: NameKind, name: &str) -> Result<(), GenerateError> {
    let (sep, max, upper) = match kind {
        NameKind::Project | NameKind::Worker | NameKind::Lane | NameKind::Provider => {
            ('-', 41, false)
        }
        NameKind::Kind => ('_', 64, true),
        NameKind::Namespace => ('_', 41, false),
    };
    if name.is_empty() {
        return Err(invalid(kind, name, "it is empty"));
    }
    if name.chars().count() > max {
        return Err(invalid(
            kind,
            name,
            format!("it is {} characters long", name.chars().count()),
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_digit() || *c == sep || is_letter(*c, upper)))
    {
        let what = if c == '/' || c == '\\' || c == '.' {
            format!("`{c}` could make it a path")
        } else if c.is_ascii_alphabetic() {
            format!(
                "`{c}` is {}-case",
                if c.is_ascii_uppercase() {
                    "upper"
                } else {
                    "lower"
                }
            )
        } else {
            format!("{c:?} is not allowed")
        };
        return Err(invalid(kind, name, what));
    }
    if !name.chars().next().is_some_and(|c| is_letter(c, upper)) {
        return Err(invalid(kind, name, "it does not start with a letter"));
    }
    if name.ends_with(sep) {
        return Err(invalid(kind, name, format!("it ends with `{sep}`")));
    }
    if name.contains(&format!("{sep}{sep}")) {
        return Err(invalid(kind, name, format!("it has `{sep}{sep}`")));
    }
    if kind == NameKind::Kind {
        let module = snake(name);
        if RUST_KEYWORDS.contains(&module.as_str()) || camel(name) == "Self" {
            return Err(invalid(
                kind,
                name,
                format!("its handler module `{module}` would be a Rust keyword"),
            ));
        }
    }
    if kind == NameKind::Provider {
        let ty = camel(name);
        if PROVIDER_TAKEN.contains(&ty.as_str()) {
            return Err(invalid(
                kind,
                name,
                format!(
                    "its client's types (`{ty}`, `{ty}Error`, …) would clash with names the generated code uses"
                ),
            ));
        }
    }
    if kind == NameKind::Namespace {
        if RUST_KEYWORDS.contains(&name) {
            return Err(invalid(kind, name, "it is a Rust keyword"));
        }
        if matches!(name, "work" | "root" | "lib" | "types") {
            return Err(invalid(
                kind,
                name,
                "the scaffold uses it (om/src/work, root.rs, lib.rs, types)",
            ));
        }
    }
    Ok(())
}

/// Why `name` breaks the rule for `kind`, for a caller with errors of its own (the queue
/// CLI); `None` when it keeps it.
pub fn why_invalid(kind: NameKind, name: &str) -> Option<String> {
    match validate(kind, name) {
        Ok(()) => None,
        Err(GenerateError::InvalidName { reason, .. }) => Some(reason),
        Err(other) => Some(other.to_string()),
    }
}

fn is_letter(c: char, upper: bool) -> bool {
    if upper {
        c.is_ascii_uppercase()
    } else {
        c.is_ascii_lowercase()
    }
}

/// `NOTIFY_SHIPMENT` → `NotifyShipment`; `SEND_2FA_CODE` → `Send2faCode`.
/// Providers whose type `<Provider>` (or `<Provider>Error`, …) is a name the generated
/// integration, handler or test already uses.
const PROVIDER_TAKEN: &[&str] = &[
    "Self",
    "Arc",
    "BTreeMap",
    "Client",
    "Duration",
    "Future",
    "Impl",
    "Item",
    "ItemState",
    "MemoryContainer",
    "Mutex",
    "MutexGuard",
    "Needs",
    "PoisonError",
    "State",
    "StatusCode",
    "Url",
    "Value",
    "VecDeque",
    "Work",
    "WorkContext",
    "WorkHandler",
];

pub fn camel(name: &str) -> String {
    name.to_upper_camel_case()
}

/// `order-sync` / `NOTIFY_SHIPMENT` → `order_sync` / `notify_shipment`.
pub fn snake(name: &str) -> String {
    name.to_snake_case()
}

/// `order-sync` → `ORDER_SYNC`; `SEND_2FA_CODE` stays `SEND_2FA_CODE`.
pub fn shouty(name: &str) -> String {
    name.to_shouty_snake_case()
}

/// Whether `ident` appears in `text` as a whole identifier.
pub(crate) fn mentions_ident(text: &str, ident: &str) -> bool {
    text.match_indices(ident).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + ident.len()..].chars().next();
        let is_ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !is_ident(before) && !is_ident(after)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_conversions_keep_digits_and_acronyms() {
        let cases = [
            ("NOTIFY_SHIPMENT", "NotifyShipment", "notify_shipment"),
            ("SEND_2FA_CODE", "Send2faCode", "send_2fa_code"),
            ("HTTP_RETRY", "HttpRetry", "http_retry"),
            ("CONSTANT_NAME", "ConstantName", "constant_name"),
            ("V2", "V2", "v2"),
            ("A", "A", "a"),
        ];
        for (kind, camel_case, snake_case) in cases {
            assert_eq!(camel(kind), camel_case, "{kind}");
            assert_eq!(snake(kind), snake_case, "{kind}");
        }
        assert_eq!(shouty("order-sync"), "ORDER_SYNC");
        assert_eq!(shouty("north-star"), "NORTH_STAR");
        assert_eq!(snake("north-star"), "north_star");
        assert_eq!(camel("outbox-relay"), "OutboxRelay");
    }

    #[test]
    fn rejects_bad_names_with_a_reason() {
        let bad = [
            (NameKind::Kind, "notify_shipment"),
            (NameKind::Kind, "_NOTIFY"),
            (NameKind::Kind, "1KIND"),
            (NameKind::Kind, "NOTIFY__SHIPMENT"),
            (NameKind::Kind, "NOTIFY_"),
            (NameKind::Kind, "NOTIFY-SHIPMENT"),
            (NameKind::Worker, "../x"),
            (NameKind::Worker, "Billing"),
            (NameKind::Worker, "billing-"),
            (NameKind::Worker, ""),
            (NameKind::Namespace, "fn"),
            (NameKind::Namespace, "work"),
            (NameKind::Namespace, "ship-ping"),
            (NameKind::Project, "a/b"),
            (NameKind::Kind, "MOVE"),
            (NameKind::Kind, "SELF"),
        ];
        for (kind, name) in bad {
            assert!(validate(kind, name).is_err(), "{name} accepted as {kind:?}");
        }
        validate(NameKind::Kind, "SEND_2FA_CODE").expect("valid kind");
        validate(NameKind::Worker, "order-sync").expect("valid worker");
        validate(NameKind::Namespace, "shipping").expect("valid namespace");
    }

    #[test]
    fn identifiers_match_whole() {
        assert!(mentions_ident("    SHIPPING_KINDS,\n", "SHIPPING_KINDS"));
        assert!(!mentions_ident("    RESHIPPING_KINDS,\n", "SHIPPING_KINDS"));
    }
}
