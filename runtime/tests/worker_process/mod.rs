//! Worker processes for the chaos tests: the test binary re-executed on one of its own
//! ignored tests, printing each loop event as a line its parent reads.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::thread;

use scaffold_runtime::LoopEvent;

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
