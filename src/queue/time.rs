//! `--run-at` parsing and timestamp printing: RFC 3339 in UTC, without a date crate.

use scaffold_runtime::Timestamp;

/// Parses `--run-at`: RFC 3339 (`2026-11-30T12:00:00Z`, fractional seconds and `+HH:MM`
/// offsets allowed), milliseconds since the Unix epoch, or a delay from `now` (`+90s`,
/// `+15m`, `+2h`, `+1d`).
pub(crate) fn parse_run_at(s: &str, now: Timestamp) -> Option<Timestamp> {
    parse_any(s, now).filter(|t| (0..=LATEST_MS).contains(&t.as_millis()))
}

/// 9999-12-31T23:59:59.999Z: the last instant RFC 3339 can print. A later `--run-at` is
/// refused rather than clamped (the item would never run, or print as garbage).
const LATEST_MS: i64 = 253_402_300_799_999;

fn parse_any(s: &str, now: Timestamp) -> Option<Timestamp> {
    let s = s.trim();
    if let Some(rel) = s.strip_prefix('+') {
        let (num, unit) = rel.split_at(rel.find(|c: char| !c.is_ascii_digit())?);
        let n: i64 = num.parse().ok()?;
        let ms = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return None,
        };
        return Some(Timestamp::from_millis(
            now.as_millis().checked_add(n.checked_mul(ms)?)?,
        ));
    }
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().ok().map(Timestamp::from_millis);
    }
    parse_rfc3339(s)
}

fn num(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn parse_rfc3339(s: &str) -> Option<Timestamp> {
    let (date, rest) = s.split_at_checked(10)?;
    let rest = rest.strip_prefix(['T', 't', ' '])?;
    let mut d = date.split('-');
    let (y, mo, da) = (num(d.next()?)?, num(d.next()?)?, num(d.next()?)?);
    if d.next().is_some() || !(1..=12).contains(&mo) || !(1..=days_in_month(y, mo)).contains(&da) {
        return None;
    }
    let (time, offset_ms) = if let Some(t) = rest.strip_suffix(['Z', 'z']) {
        (t, 0)
    } else {
        let at = rest.rfind(['+', '-'])?;
        let (t, off) = rest.split_at(at);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let (oh, om) = off[1..].split_once(':')?;
        let (oh, om) = (num(oh)?, num(om)?);
        if oh > 23 || om > 59 {
            return None;
        }
        (t, sign * (oh * 3_600_000 + om * 60_000))
    };
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.split(':');
    let (h, mi, se) = (num(t.next()?)?, num(t.next()?)?, num(t.next()?)?);
    if t.next().is_some() || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let millis = if frac.is_empty() {
        0
    } else {
        let digits: String = frac.chars().chain("000".chars()).take(3).collect();
        if !frac.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        num(&digits)?
    };
    let days = days_from_civil(y, mo, da);
    let ms = ((days * 24 + h) * 60 + mi) * 60_000 + se * 1000 + millis - offset_ms;
    Some(Timestamp::from_millis(ms))
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `2026-11-30T12:00:00.000Z`; `never` for the far future a signal-parked item waits at.
pub(crate) fn format(t: Timestamp) -> String {
    if t == Timestamp::MAX {
        return "never".to_owned();
    }
    let ms = t.as_millis();
    let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let (h, mi, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips() {
        let now = Timestamp::from_millis(0);
        let t = parse_run_at("2026-11-30T12:34:56.789Z", now).expect("parses");
        assert_eq!(format(t), "2026-11-30T12:34:56.789Z");
        let offset = parse_run_at("2026-11-30T14:34:56.789+02:00", now).expect("parses");
        assert_eq!(offset, t);
        assert_eq!(
            format(Timestamp::from_millis(0)),
            "1970-01-01T00:00:00.000Z"
        );
        assert_eq!(
            parse_run_at("2024-02-29T00:00:00Z", now)
                .map(format)
                .as_deref(),
            Some("2024-02-29T00:00:00.000Z")
        );
    }

    #[test]
    fn relative_and_epoch_forms() {
        let now = Timestamp::from_millis(1_000);
        assert_eq!(
            parse_run_at("+90s", now),
            Some(Timestamp::from_millis(91_000))
        );
        assert_eq!(
            parse_run_at("+2h", now),
            Some(Timestamp::from_millis(7_201_000))
        );
        assert_eq!(
            parse_run_at("1700000000000", now),
            Some(Timestamp::from_millis(1_700_000_000_000))
        );
    }

    #[test]
    fn past_year_9999_and_before_1970_are_refused() {
        let now = Timestamp::from_millis(0);
        assert!(parse_run_at("253402300799999", now).is_some());
        assert!(parse_run_at("253402300800000", now).is_none());
        assert!(parse_run_at("+3000000d", now).is_none());
        assert!(parse_run_at("1969-12-31T23:59:59Z", now).is_none());
    }

    #[test]
    fn garbage_is_refused() {
        let now = Timestamp::from_millis(0);
        for bad in [
            "",
            "tomorrow",
            "2026-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "+5y",
            "2026-11-30",
            "2026-11-30T25:00:00Z",
        ] {
            assert_eq!(parse_run_at(bad, now), None, "{bad}");
        }
    }
}
