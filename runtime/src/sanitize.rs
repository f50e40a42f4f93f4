//! The one sanitizer of failure messages a remote worker sends the coordinator
//! (README.md#artifacts-in-handlers): whatever a handler, a panic or a library put in its
//! error, what leaves the worker carries no token or credential, no absolute path, no
//! backtrace and none of the payload's contents — one line of at most [`MAX_MESSAGE`]
//! bytes. The coordinator stores it as the item's `last_error`, where operators read it.

use serde_json::Value;

/// The longest failure message sent, in bytes.
pub const MAX_MESSAGE: usize = 1024;

/// How deep and how many of a payload's values are looked for in a message.
const PAYLOAD_DEPTH: usize = 32;
const PAYLOAD_VALUES: usize = 2_000;

/// `message` without a backtrace, the payload's values, tokens and credentials, or
/// absolute paths; on one line, at most [`MAX_MESSAGE`] bytes.
pub fn failure_message(message: &str, payload: &Value) -> String {
    // Paths and secrets first: a payload value that happens to be a secret's label
    // (`password`, `Bearer`) or a path's start must not hide what follows it; a path
    // first, so a file named `….key` is one `[path]`, not a secret's label.
    let kept = without_backtrace(capped(message));
    let kept = without_paths(&kept);
    let kept = without_credentials(&kept);
    let kept = without_payload(&kept, payload);
    one_line(&kept)
}

/// The most of a message looked at: what is past it could never be sent anyway.
const MAX_INPUT: usize = 64 << 10;

fn capped(message: &str) -> &str {
    if message.len() <= MAX_INPUT {
        return message;
    }
    let mut cut = MAX_INPUT;
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    &message[..cut]
}

/// What comes before the first line that starts a backtrace (Rust's `stack backtrace:`,
/// its frames, `note: run with RUST_BACKTRACE`, a Python traceback, a Go `goroutine`).
fn without_backtrace(message: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for line in message.lines() {
        let t = line.trim_start();
        let lower = t.to_ascii_lowercase();
        let frame = t
            .split_once(": ")
            .is_some_and(|(n, rest)| n.bytes().all(|b| b.is_ascii_digit()) && rest.contains("::"));
        let at = lower.starts_with("at ") && (t.contains(".rs:") || t.contains("::"));
        if lower.starts_with("stack backtrace")
            || lower.starts_with("backtrace:")
            || lower.starts_with("traceback (most recent call last)")
            || lower.starts_with("goroutine ")
            || lower.contains("run with `rust_backtrace")
            || frame
            || at
        {
            break;
        }
        out.push(line);
    }
    out.join("\n")
}

/// Every string value of four characters or more and every number of four digits or
/// more in `payload`, replaced by `[payload]`, longest first.
fn without_payload(message: &str, payload: &Value) -> String {
    let mut values = Vec::new();
    leaves(payload, 0, &mut values);
    values.retain(|v| v.chars().count() >= 4);
    values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    values.dedup();
    let mut out = message.to_owned();
    for v in values {
        if out.contains(v.as_str()) {
            out = replace_whole(&out, &v, "[payload]");
        }
    }
    out
}

/// `hay` with each occurrence of `needle` that is not part of a longer word (a letter or
/// digit right before or after it) replaced by `with`.
fn replace_whole(hay: &str, needle: &str, with: &str) -> String {
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let mut out = String::with_capacity(hay.len());
    let mut rest = hay;
    while let Some(at) = rest.find(needle) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + needle.len()..].chars().next();
        let first = needle.chars().next();
        let last = needle.chars().next_back();
        let inside = (word(first) && word(before)) || (word(last) && word(after));
        out.push_str(&rest[..at]);
        out.push_str(if inside { needle } else { with });
        rest = &rest[at + needle.len()..];
    }
    out.push_str(rest);
    out
}

fn leaves(v: &Value, depth: usize, out: &mut Vec<String>) {
    if depth > PAYLOAD_DEPTH || out.len() >= PAYLOAD_VALUES {
        return;
    }
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(a) => a.iter().for_each(|x| leaves(x, depth + 1, out)),
        Value::Object(m) => m.values().for_each(|x| leaves(x, depth + 1, out)),
        Value::Bool(_) | Value::Null => {}
    }
}

/// A word character of a token: unpadded base64url.
fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Words a secret hides behind when it is written `name=value` or `name: value` (matched
/// anywhere in the name: `aws_secret_access_key`, `X-Api-Key`, `session_token`).
const SECRET_NAMES: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "apikey",
    "api_key",
    "api-key",
    "access_key",
    "private_key",
    "authorization",
    "signature",
    "credential",
    "session",
    "cookie",
];

/// Names that are a secret's only when they are the whole name (`key=…`, `sig=…`).
const SECRET_WORDS: &[&str] = &["key", "sig", "auth", "pass"];

/// Names whose value runs to the end of the line or its closing quote (a header's).
const WHOLE_VALUE: &[&str] = &["authorization", "cookie", "set-cookie"];

/// Tokens and credentials: `scf_…` tokens, `Bearer …`, a URL's `user:password@`, a value
/// after a secret's name (to its closing quote when quoted, JSON escapes included), and any
/// long run of token characters mixing letters and digits (a key, a signature) that is not
/// a SHA-256 digest.
fn without_credentials(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let chars: Vec<char> = message.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if token_char(c) && (i == 0 || !token_char(chars[i - 1])) {
            let end = (i..chars.len())
                .find(|&j| !token_char(chars[j]))
                .unwrap_or(chars.len());
            let word: String = chars[i..end].iter().collect();
            out.push_str(&word_without_secret(&word));
            i = end;
            let lower = word.to_ascii_lowercase();
            let named = SECRET_NAMES.iter().any(|n| lower.contains(n))
                || SECRET_WORDS.contains(&lower.as_str());
            let bearer = lower == "bearer" || lower == "basic";
            if (named || bearer)
                && let Some((sep, value_end)) = secret_value(&chars, i, &lower, bearer)
            {
                out.push_str(&sep);
                out.push_str("[redacted]");
                i = value_end;
            }
            continue;
        }
        // `scheme://user:password@host`: the user information goes.
        if c == '@' {
            let start = out.rfind("://").map(|p| p + 3);
            if let Some(start) = start
                && !out[start..].contains(|ch: char| ch.is_whitespace() || ch == '/')
                && start < out.len()
            {
                out.truncate(start);
                out.push_str("[redacted]@");
                i += 1;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// After a secret's name (`name` lower-cased) ending before `from`: the separator as
/// written and where the value ends, when a value follows. A quoted value (`"…"`, `'…'`,
/// `\"…\"`) runs to its closing quote; a header's (`Authorization: Token x`) to the end
/// of the line; a `Bearer`'s or an unquoted one to the next space, quote or separator.
fn secret_value(chars: &[char], from: usize, name: &str, bearer: bool) -> Option<(String, usize)> {
    let mut j = from;
    let mut sep = String::new();
    while j < chars.len() && matches!(chars[j], ' ' | '=' | ':' | '"' | '\'' | '\\') {
        sep.push(chars[j]);
        j += 1;
    }
    let sep_ok = if bearer {
        sep == " "
    } else {
        sep.contains('=') || sep.contains(':')
    };
    if !sep_ok || j >= chars.len() || chars[j] == '\n' {
        return None;
    }
    let line_end = (j..chars.len())
        .find(|&k| chars[k] == '\n')
        .unwrap_or(chars.len());
    let quote = sep.chars().rev().find(|c| matches!(c, '"' | '\''));
    let end = match quote {
        Some(q) if sep.ends_with(q) || sep.ends_with('\\') => {
            (j..line_end)
                .find(|&k| chars[k] == q)
                .map_or(line_end, |k| {
                    // `\"`: the backslash before the closing quote stays with it.
                    if k > j && chars[k - 1] == '\\' {
                        k - 1
                    } else {
                        k
                    }
                })
        }
        _ if WHOLE_VALUE.iter().any(|w| name.ends_with(w)) => line_end,
        _ => (j..line_end)
            .find(|&k| {
                chars[k].is_whitespace() || matches!(chars[k], '"' | '\'' | ',' | ';' | '&' | '\\')
            })
            .unwrap_or(line_end),
    };
    (end > j).then_some((sep, end))
}

fn word_without_secret(word: &str) -> String {
    if let Some(rest) = word.strip_prefix("scf_")
        && let Some((kind, secret)) = rest.split_once('_')
        && !secret.is_empty()
    {
        return format!("scf_{kind}_[redacted]");
    }
    let letters = word.bytes().any(|b| b.is_ascii_alphabetic());
    let digits = word.bytes().any(|b| b.is_ascii_digit());
    let digest = word.len() == 64 && word.bytes().all(|b| b.is_ascii_hexdigit());
    if word.len() >= 32 && letters && digits && !digest {
        return "[redacted]".to_owned();
    }
    word.to_owned()
}

/// Absolute paths (`/…`, `~/…`, `C:\…`, `file://…`) become `[path]`; a URL's own path
/// (after `scheme://host`) stays.
fn without_paths(message: &str) -> String {
    let chars: Vec<char> = message.chars().collect();
    let mut out = String::with_capacity(message.len());
    let mut i = 0;
    let path_char = |c: char| {
        !c.is_whitespace() && !matches!(c, '"' | '\'' | '`' | ',' | ';' | ')' | ']' | '>')
    };
    while i < chars.len() {
        let c = chars[i];
        let prev = if i == 0 { ' ' } else { chars[i - 1] };
        let starts_word = prev.is_whitespace()
            || matches!(prev, '"' | '\'' | '`' | '(' | '[' | '=' | '<' | ',' | ':');
        let rest: String = chars[i..chars.len().min(i + 8)].iter().collect();
        let lower = rest.to_ascii_lowercase();
        let file_uri = lower.starts_with("file://");
        let unix =
            c == '/' && starts_word && chars.get(i + 1).is_some_and(|&n| path_char(n) && n != '/');
        let home = c == '~' && starts_word && chars.get(i + 1) == Some(&'/');
        let drive = c.is_ascii_alphabetic()
            && chars.get(i + 1) == Some(&':')
            && chars.get(i + 2).is_some_and(|&n| n == '\\' || n == '/');
        let unc = c == '\\' && chars.get(i + 1) == Some(&'\\');
        // A Windows path may hold spaces (`C:\Program Files\…`): it runs to the closing
        // quote or the end of the line.
        let windows = starts_word && (drive || unc);
        if file_uri || (starts_word && (unix || home)) || windows {
            let end = if windows {
                (i..chars.len())
                    .find(|&j| matches!(chars[j], '\n' | '"' | '\'' | '`'))
                    .unwrap_or(chars.len())
            } else {
                (i..chars.len())
                    .find(|&j| !path_char(chars[j]))
                    .unwrap_or(chars.len())
            };
            // A sentence's last full stop or colon stays outside the path.
            let mut end = end;
            while end > i + 1 && matches!(chars[end - 1], '.' | ':') {
                end -= 1;
            }
            out.push_str("[path]");
            i = end;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// One line (runs of whitespace made one space), cut at [`MAX_MESSAGE`] bytes on a
/// character boundary.
fn one_line(message: &str) -> String {
    let mut out = message.split_whitespace().collect::<Vec<_>>().join(" ");
    if out.len() > MAX_MESSAGE {
        let mut cut = MAX_MESSAGE - '…'.len_utf8();
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::failure_message;
    use serde_json::json;

    fn clean(m: &str) -> String {
        failure_message(m, &json!(null))
    }

    #[test]
    fn tokens_and_credentials_are_redacted() {
        let ses = "scf_ses_Q2hhbGxlbmdlLXRva2VuLXRoYXQtaXMtbG9uZy1lbm91Z2g";
        let out = clean(&format!("call refused with {ses} (401)"));
        assert_eq!(out, "call refused with scf_ses_[redacted] (401)");
        assert_eq!(
            clean("sent Authorization: Bearer abc.def-ghi"),
            "sent Authorization: [redacted]"
        );
        assert_eq!(clean("sent Bearer abc.def-ghi"), "sent Bearer [redacted]");
        assert_eq!(
            clean("connect postgres://app:hunter2@db:5432/q failed"),
            "connect postgres://[redacted]@db:5432/q failed"
        );
        assert_eq!(
            clean("bad config token=abcd password: \"p4ss\" api_key=zzz"),
            "bad config token=[redacted] password: \"[redacted]\" api_key=[redacted]"
        );
        let key = "AKIA7Q2LJ4Y3EXAMPLE0KEY0SECRET0VALUE09";
        assert_eq!(
            clean(&format!("provider said {key}")),
            "provider said [redacted]"
        );
        // A digest is what an operator needs to find an artifact: it stays.
        let digest = "a".repeat(32) + &"0".repeat(32);
        assert_eq!(clean(&format!("input {digest}")), format!("input {digest}"));
    }

    #[test]
    fn absolute_paths_are_redacted_and_urls_kept() {
        assert_eq!(
            clean("cannot open /home/worker/.state/device.key: denied"),
            "cannot open [path]: denied"
        );
        assert_eq!(
            clean("wrote file:///var/lib/out.csv and ~/x.txt"),
            "wrote [path] and [path]"
        );
        assert_eq!(clean(r"missing C:\Users\w\in.txt."), "missing [path].");
        assert_eq!(clean(r"open C:\Program Files\acme\key.pem"), "open [path]");
        assert_eq!(clean(r"share \\server\share\x"), "share [path]");
        assert_eq!(
            clean("config:/home/u/.aws/credentials unreadable"),
            "config:[path] unreadable"
        );
        assert_eq!(
            clean("GET https://coordinator.example/v1/artifacts/ab failed"),
            "GET https://coordinator.example/v1/artifacts/ab failed"
        );
        assert_eq!(clean("3/4 done, ratio 1/2"), "3/4 done, ratio 1/2");
    }

    #[test]
    fn a_backtrace_is_cut_off() {
        let panic = "the handler panicked: index out of bounds\nstack backtrace:\n   0: rust_begin_unwind\n             at /rustc/abc/library/std/src/panicking.rs:652:5\n   1: core::panicking::panic_fmt";
        assert_eq!(clean(panic), "the handler panicked: index out of bounds");
        let frames = "oops\n   0: acme::handler::run\n   1: tokio::runtime::park";
        assert_eq!(clean(frames), "oops");
        let py = "failed\nTraceback (most recent call last):\n  File \"/srv/x.py\", line 3";
        assert_eq!(clean(py), "failed");
        let note = "thread 'main' panicked at src/x.rs:3:5:\nboom\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace";
        assert_eq!(clean(note), "thread 'main' panicked at src/x.rs:3:5: boom");
    }

    #[test]
    fn more_ways_secrets_are_written() {
        assert_eq!(
            clean("aws_secret_access_key=AbC/dEf+GhI= secret_key: k1 session=s2 sig=z3 key=k4"),
            "aws_secret_access_key=[redacted] secret_key: [redacted] session=[redacted] sig=[redacted] key=[redacted]"
        );
        assert_eq!(
            clean("sent Authorization: Token abc123def and more\nnext line"),
            "sent Authorization: [redacted] next line"
        );
        assert_eq!(
            clean(r#"body {\"token\":\"s3cr3t\",\"n\":1}"#),
            r#"body {\"token\":\"[redacted]\",\"n\":1}"#
        );
        assert_eq!(
            clean(r#"password: "two words", user: ada"#),
            r#"password: "[redacted]", user: ada"#
        );
        assert_eq!(clean("Cookie: a=1; b=2"), "Cookie: [redacted]");
    }

    #[test]
    fn a_payload_value_that_is_a_label_hides_nothing() {
        let payload = json!({"grant_type": "password", "token_type": "Bearer", "root": "/srv", "mode": "fail", "limit": 1000});
        assert_eq!(
            failure_message(
                "password=hunter2x then Authorization: Bearer abc.def",
                &payload
            ),
            "[payload]=[redacted] then Authorization: [redacted]"
        );
        assert_eq!(
            failure_message("cannot open /srv/acme/secrets/key.pem", &payload),
            "cannot open [path]"
        );
        // Whole values only: a value inside a longer word stays.
        assert_eq!(
            failure_message(
                "handler failed after 10000ms; mode fail, limit 1000",
                &payload
            ),
            "handler failed after 10000ms; mode [payload], limit [payload]"
        );
    }

    #[test]
    fn the_payloads_contents_are_redacted() {
        let payload = json!({
            "email": "ada@example.com",
            "card": {"number": 4111111111111111_u64, "cvc": "123"},
            "notes": ["ship to 12 Main Street"],
        });
        let out = failure_message(
            "provider refused ada@example.com card 4111111111111111 at 12 Main Street (cvc 123)",
            &payload,
        );
        // Short values ("123") and parts of a longer value stay: only whole values go.
        assert_eq!(
            out,
            "provider refused [payload] card [payload] at 12 Main Street (cvc 123)"
        );
        assert!(!out.contains("ada@example.com") && !out.contains("4111111111111111"));
        let whole = failure_message("bad: ship to 12 Main Street", &payload);
        assert_eq!(whole, "bad: [payload]");
    }

    #[test]
    fn the_message_is_one_bounded_line() {
        let long = "é".repeat(2_000);
        let out = clean(&long);
        assert!(out.len() <= super::MAX_MESSAGE, "{}", out.len());
        assert!(out.ends_with('…'));
        assert_eq!(clean("a\n\n  b\tc"), "a b c");
    }
}
