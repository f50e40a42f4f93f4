//! What the pages print: times in UTC and relative to now, payloads redacted, and the
//! templates (auto-escaped: every value a page prints is escaped for HTML).

use std::time::{Duration, UNIX_EPOCH};

use minijinja::Environment;
use serde::Serialize;
use serde_json::Value;

use super::DashboardError;
use crate::time::Timestamp;

/// The templates, shipped in the binary.
const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("templates/base.html")),
    ("lanes.html", include_str!("templates/lanes.html")),
    ("items.html", include_str!("templates/items.html")),
    ("item.html", include_str!("templates/item.html")),
    ("workers.html", include_str!("templates/workers.html")),
    ("outbox.html", include_str!("templates/outbox.html")),
    ("login.html", include_str!("templates/login.html")),
    ("done.html", include_str!("templates/done.html")),
    ("error.html", include_str!("templates/error.html")),
];

/// The templates, each checked as it is added (a broken one stops the dashboard at start).
pub(super) fn environment() -> Result<Environment<'static>, DashboardError> {
    let mut env = Environment::new();
    // `.html` names are auto-escaped (minijinja's default); undefined values are errors.
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    for (name, source) in TEMPLATES {
        env.add_template(name, source)
            .map_err(|e| DashboardError::Template(format!("{name}: {e}")))?;
    }
    Ok(env)
}

/// Renders `name` with `ctx`.
pub(super) fn render(
    env: &Environment<'static>,
    name: &str,
    ctx: impl Serialize,
) -> Result<String, DashboardError> {
    env.get_template(name)
        .and_then(|t| t.render(ctx))
        .map_err(|e| DashboardError::Template(format!("{name}: {e:#}")))
}

/// A time as UTC to the second (`2026-12-06 03:28:14Z`).
pub(super) fn utc(t: Timestamp) -> String {
    let ms = t.as_millis();
    if ms <= 0 || t == Timestamp::MAX {
        return "never".to_owned();
    }
    // RFC 3339 ends at 9999-12-31 (humantime's formatter errs past it).
    if ms >= 253_402_300_800_000 {
        return "after the year 9999".to_owned();
    }
    let at = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    let s = humantime::format_rfc3339_seconds(at).to_string();
    s.replacen('T', " ", 1)
}

/// A span in words, to the largest two units (`3m 20s`, `2h 5m`, `450ms`).
pub(super) fn span(ms: u64) -> String {
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let s = ms / 1000;
    let (d, h, m, s) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

/// `t` relative to `now`: `12s ago` or `in 3m 20s`.
pub(super) fn relative(t: Timestamp, now: Timestamp) -> String {
    if t == Timestamp::MAX {
        return "never".to_owned();
    }
    if t <= now {
        format!("{} ago", span(now.millis_since(t)))
    } else {
        format!("in {}", span(t.millis_since(now)))
    }
}

/// A time both ways, for a page: `{utc, ago}`.
#[derive(Debug, Clone, Serialize)]
pub(super) struct When {
    pub utc: String,
    pub rel: String,
}

pub(super) fn when(t: Timestamp, now: Timestamp) -> When {
    When {
        utc: utc(t),
        rel: relative(t, now),
    }
}

/// A JSON value as a page shows it: whole when payloads are shown, else its size in bytes
/// and its top-level keys (or its type) — a payload may hold what an operator's screen
/// should not.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Shown {
    pub bytes: usize,
    /// The whole value, pretty-printed, when shown.
    pub whole: Option<String>,
    /// Its top-level keys (an object), sorted.
    pub keys: Vec<String>,
    /// What it is: `object`, `array of 3`, `string`, `number`, `boolean`, `null`.
    pub shape: String,
}

pub(super) fn shown(v: &Value, whole: bool) -> Shown {
    let bytes = serde_json::to_vec(v).map_or(0, |b| b.len());
    let (keys, shape) = match v {
        Value::Object(m) => {
            let mut keys: Vec<String> = m.keys().cloned().collect();
            keys.sort();
            (keys, "object".to_owned())
        }
        Value::Array(a) => (Vec::new(), format!("array of {}", a.len())),
        Value::String(_) => (Vec::new(), "string".to_owned()),
        Value::Number(_) => (Vec::new(), "number".to_owned()),
        Value::Bool(_) => (Vec::new(), "boolean".to_owned()),
        Value::Null => (Vec::new(), "null".to_owned()),
    };
    Shown {
        bytes,
        whole: whole.then(|| serde_json::to_string_pretty(v).unwrap_or_default()),
        keys,
        shape,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_and_redaction() {
        assert_eq!(span(450), "450ms");
        assert_eq!(span(200_000), "3m 20s");
        assert_eq!(span(7_500_000), "2h 5m");
        let now = Timestamp::from_millis(1_000_000);
        assert_eq!(relative(Timestamp::from_millis(988_000), now), "12s ago");
        assert_eq!(relative(Timestamp::from_millis(1_005_000), now), "in 5s");
        let v = serde_json::json!({"card": "4242", "amount": 3});
        let s = shown(&v, false);
        assert_eq!(s.keys, ["amount", "card"]);
        assert!(s.whole.is_none());
        assert_eq!(s.bytes, v.to_string().len());
        assert!(shown(&v, true).whole.is_some_and(|w| w.contains("4242")));
        assert_eq!(
            utc(Timestamp::from_millis(1_796_527_694_000)),
            "2026-12-06 03:28:14Z"
        );
        assert_eq!(
            utc(Timestamp::from_millis(253_402_300_800_000)),
            "after the year 9999"
        );
        assert_eq!(
            utc(Timestamp::from_millis(i64::MAX - 1)),
            "after the year 9999"
        );
    }
}
