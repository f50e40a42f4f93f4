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
    let kept = without_backtrace(message);
    let kept = without_payload(&kept, payload);
    let kept = without_credentials(&kept);
    let kept = without_paths(&kept);
    one_line(&kept)
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
            out = out.replace(v.as_str(), "[payload]");
        }
    }
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

/// Words a secret hides behind when it is written `name=value` or `name: value`.
const SECRET_NAMES: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "apikey",
    "api_key",
    "api-key",
    "authorization",
    "signature",
    "credential",
];

/// Tokens and credentials: `scf_…` tokens, `Bearer …`, a URL's `user:password@`, a value
/// after a secret's name, and any long run of token characters mixing letters and digits
/// (a key, a signature) that is not a SHA-256 digest.
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
            // `Bearer x`, `token=x`, `password: x`: the next word is the secret.
            let lower = word.to_ascii_lowercase();
            let named = SECRET_NAMES.iter().any(|n| lower.ends_with(n));
            let bearer = lower == "bearer" || lower == "basic";
            if named || bearer {
                let mut j = i;
                let mut sep = String::new();
                while j < chars.len() && matches!(chars[j], ' ' | '=' | ':' | '"' | '\'') {
                    sep.push(chars[j]);
                    j += 1;
                }
                let sep_ok = if bearer {
                    sep == " "
                } else {
                    sep.contains('=') || sep.contains(':')
                };
                let end_of = |from: usize| {
                    (from..chars.len())
                        .find(|&k| {
                            chars[k].is_whitespace()
                                || matches!(chars[k], '"' | '\'' | ',' | ';' | '&')
                        })
                        .unwrap_or(chars.len())
                };
                let mut value_end = end_of(j);
                // `Authorization: Bearer x`: the scheme and its credential both go.
                let scheme: String = chars[j..value_end]
                    .iter()
                    .collect::<String>()
                    .to_ascii_lowercase();
                if named && (scheme == "bearer" || scheme == "basic") {
                    let mut k = value_end;
                    while k < chars.len() && chars[k] == ' ' {
                        k += 1;
                    }
                    value_end = end_of(k);
                }
                if sep_ok && value_end > j {
                    out.push_str(&sep);
                    out.push_str("[redacted]");
                    i = value_end;
                }
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
        let starts_word =
            prev.is_whitespace() || matches!(prev, '"' | '\'' | '`' | '(' | '[' | '=' | '<' | ',');
        let rest: String = chars[i..chars.len().min(i + 8)].iter().collect();
        let lower = rest.to_ascii_lowercase();
        let file_uri = lower.starts_with("file://");
        let unix =
            c == '/' && starts_word && chars.get(i + 1).is_some_and(|&n| path_char(n) && n != '/');
        let home = c == '~' && starts_word && chars.get(i + 1) == Some(&'/');
        let windows = c.is_ascii_alphabetic()
            && starts_word
            && chars.get(i + 1) == Some(&':')
            && chars.get(i + 2).is_some_and(|&n| n == '\\' || n == '/');
        if file_uri || (starts_word && (unix || home || windows)) {
            let end = (i..chars.len())
                .find(|&j| !path_char(chars[j]))
                .unwrap_or(chars.len());
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
