use std::io::{self, Write};

use crate::check::finding::Severity;
use crate::check::sink::Outcome;

/// `::error file=…,line=…,col=…,title=<rule>::message` per finding, then a summary line
/// (GitHub shows only the first 10 annotations of each level per step). A file is named
/// from the checkout's root: `in_git` is the scaffold root's folder there (`platform/`).
pub(super) fn outcome(out: &mut dyn Write, in_git: &str, o: &Outcome) -> io::Result<()> {
    for f in super::sorted(o) {
        let level = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut message = f.message.clone();
        if !f.help.is_empty() {
            message.push_str("\nhelp: ");
            message.push_str(&f.help);
        }
        writeln!(
            out,
            "::{level} file={},line={},col={},title={}::{}",
            property(&format!("{in_git}{}", f.path)),
            f.line,
            f.column,
            property(f.rule),
            data(&message)
        )?;
    }
    writeln!(out, "scaffold check: {}", super::summary_line(o))
}

fn data(s: &str) -> String {
    let encoded = s
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A");
    // Any other control character (ESC from a file name) is escaped, never printed raw.
    super::escape_controls(&encoded, false).into_owned()
}

fn property(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}
