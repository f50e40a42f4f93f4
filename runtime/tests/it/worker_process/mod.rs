//! Worker processes for the chaos tests: the test binary re-executed on one of its own
//! ignored tests, printing each loop event as a line its parent reads.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::thread;

use std::collections::BTreeMap;

use scaffold_runtime::{AttemptRecord, LoopEvent};

/// Every claim's history, by (id, fence).
pub type History = BTreeMap<(i64, i64), AttemptRecord>;

/// One line a worker printed: `<tag> <event> <id> <fence> [<rest>…]`.
pub struct Line<'a> {
    pub event: &'a str,
    pub id: i64,
    pub fence: i64,
    /// The words after the fence.
    pub rest: &'a [&'a str],
}

/// Starts this test binary on the ignored test `test` with `env` set to `url`, and hands
/// each of its lines tagged `tag` to `on_line`, on a thread of its own.
pub fn spawn(
    test: &str,
    env: &str,
    url: &str,
    tag: &'static str,
    mut on_line: impl FnMut(Line<'_>) + Send + 'static,
) -> Child {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = Command::new(exe)
        .args(["--exact", test, "--nocapture", "--ignored"])
        .env(env, url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("a worker process starts");
    let stdout = child.stdout.take().expect("the worker's stdout");
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let parts: Vec<&str> = line.split_whitespace().collect();
            let [first, event, id, fence, rest @ ..] = parts.as_slice() else {
                continue;
            };
            let (Ok(id), Ok(fence)) = (id.parse(), fence.parse()) else {
                continue;
            };
            if *first == tag {
                on_line(Line {
                    event,
                    id,
                    fence,
                    rest,
                });
            }
        }
    });
    child
}

/// What a worker's loop observer prints for its parent: accepted completions, refused
/// (stale) completions and lost leases, as `<tag> <event> <id> <fence>` lines.
pub fn print_events(tag: &'static str) -> impl Fn(&LoopEvent) + Send + Sync + 'static {
    move |e| match e {
        LoopEvent::Finished {
            id,
            fence,
            outcome: "completed",
        } => println!("{tag} completed {id} {fence}"),
        LoopEvent::StaleRejected { id, fence } => println!("{tag} stale {id} {fence}"),
        LoopEvent::LeaseLost { id, fence } => println!("{tag} lost {id} {fence}"),
        _ => {}
    }
}

/// The closures a holder ran with no lease: started after its claim had ended (reaped as
/// expired, cancelled, released) or after a later claim of the item. Returns them all and,
/// of them, those that started after the lease `once` had just confirmed ran out by the
/// clock (a stop landing between `once`'s last look at the clock and the closure's first
/// line: the window the runtime README names).
pub fn ran_without_a_lease(ran: &[(i64, i64, i64, i64)], history: &History) -> (usize, usize) {
    let (mut without, mut in_window) = (0, 0);
    for &(id, fence, confirmed_until, start) in ran {
        let ended = history.get(&(id, fence)).and_then(|a| {
            (!matches!(
                a.outcome.as_str(),
                "completed" | "failed" | "dead" | "parked"
            ))
            .then_some(a.finished_at.as_millis())
        });
        let passed = history
            .range((id, fence + 1)..(id + 1, i64::MIN))
            .filter_map(|(_, a)| a.claimed_at.map(|t| t.as_millis()))
            .min();
        if ended.into_iter().chain(passed).any(|t| start >= t) {
            without += 1;
            if start >= confirmed_until {
                in_window += 1;
            }
        }
    }
    (without, in_window)
}
