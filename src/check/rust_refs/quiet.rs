//! Running the lexer and parser over hostile text: a panic of theirs is caught and not
//! printed (the fast scan and the depth budget both run them; the file then goes to syn,
//! or is reported).

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

/// Runs `f`, catching a panic (`None`) without printing it.
pub(super) fn quietly<T>(f: impl FnOnce() -> T) -> Option<T> {
    quiet_panics_in_scan();
    QUIET.set(true);
    let out = catch_unwind(AssertUnwindSafe(f));
    QUIET.set(false);
    out.ok()
}

thread_local! {
    /// Set while this thread runs the scan: a panic then is caught and not printed.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Wraps the process's panic hook, once, so it stays silent for panics the scan catches.
fn quiet_panics_in_scan() {
    static WRAP: Once = Once::new();
    WRAP.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.get() {
                previous(info);
            }
        }));
    });
}
