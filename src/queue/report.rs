//! Everything `scaffold queue` prints, human and JSON, in one place. Output is
//! deterministic: lanes by name, items by id, fixed key order.

use std::io::{self, Write};

use scaffold_runtime::bench::BenchReport;
use scaffold_runtime::{ItemRecord, ItemState, LaneStats};
use serde::Serialize;
use serde_json::Value;

use super::time;

/// What a queue command has to say.
#[derive(Debug)]
pub enum Printed {
    Migrated {
        database: String,
        schema_version: i64,
    },
    Enqueued(Box<ItemRecord>),
    Status(Vec<LaneStats>),
    List(Vec<ItemRecord>),
    Retried {
        ids: Vec<i64>,
        count: u64,
    },
    Discarded {
        id: i64,
    },
    Bench(BenchReport),
}

/// Writes `printed` to `out`, as JSON (one document and a newline) or for people.
pub fn print(out: &mut dyn Write, printed: &Printed, as_json: bool) -> io::Result<()> {
    if as_json {
        let doc = to_json(printed);
        serde_json::to_writer(&mut *out, &doc).map_err(io::Error::other)?;
        return writeln!(out);
    }
    match printed {
        Printed::Migrated {
            database,
            schema_version,
        } => {
            writeln!(out, "migrated {database} (schema version {schema_version})")
        }
        Printed::Enqueued(item) => writeln!(
            out,
            "enqueued item {} ({} on lane {}, {}, runs at {})",
            item.id,
            item.kind,
            item.lane,
            item.state,
            time::format(item.run_at)
        ),
        Printed::Status(lanes) => status_table(out, lanes),
        Printed::List(items) => list_table(out, items),
        Printed::Retried { ids, count } => match ids.as_slice() {
            [id] => writeln!(out, "retried item {id}"),
            _ => writeln!(out, "retried {count} dead item(s)"),
        },
        Printed::Discarded { id } => writeln!(out, "discarded item {id}"),
        Printed::Bench(b) => writeln!(
            out,
            "{}: {} jobs, concurrency {}: enqueued in {} ms, drained in {} ms: {} jobs/s ({} completed)",
            b.backend, b.jobs, b.concurrency, b.enqueue_ms, b.drain_ms, b.jobs_per_sec, b.completed
        ),
    }
}

/// The JSON documents, as structs so keys keep the documented order.
#[derive(Serialize)]
#[serde(untagged)]
enum Doc<'a> {
    Migrated {
        database: &'a str,
        schema_version: i64,
    },
    Item(ItemJson<'a>),
    Status {
        lanes: Vec<LaneJson<'a>>,
    },
    List {
        items: Vec<ItemJson<'a>>,
    },
    Retried {
        retried: u64,
        ids: &'a [i64],
    },
    Discarded {
        discarded: i64,
    },
    Bench(&'a BenchReport),
}

#[derive(Serialize)]
struct LaneJson<'a> {
    lane: &'a str,
    available: u64,
    running: u64,
    completed: u64,
    failed: u64,
    dead: u64,
    parked: u64,
    oldest_available_age_ms: u64,
}

#[derive(Serialize)]
struct ItemJson<'a> {
    id: i64,
    kind: &'a str,
    lane: &'a str,
    state: &'static str,
    priority: i32,
    attempt: i32,
    max_attempts: i32,
    run_at: String,
    fence: i64,
    dedupe_key: Option<&'a str>,
    parked_on: Option<&'a str>,
    last_error: Option<&'a str>,
    payload: &'a Value,
}

fn to_json(printed: &Printed) -> Doc<'_> {
    match printed {
        Printed::Migrated {
            database,
            schema_version,
        } => Doc::Migrated {
            database,
            schema_version: *schema_version,
        },
        Printed::Enqueued(item) => Doc::Item(item_json(item)),
        Printed::Status(lanes) => Doc::Status {
            lanes: lanes
                .iter()
                .map(|l| LaneJson {
                    lane: &l.lane,
                    available: l.get(ItemState::Available).count,
                    running: l.get(ItemState::Running).count,
                    completed: l.get(ItemState::Completed).count,
                    failed: l.get(ItemState::Failed).count,
                    dead: l.get(ItemState::Dead).count,
                    parked: l.get(ItemState::Parked).count,
                    oldest_available_age_ms: l.get(ItemState::Available).oldest_age_ms,
                })
                .collect(),
        },
        Printed::List(items) => Doc::List {
            items: items.iter().map(item_json).collect(),
        },
        Printed::Retried { ids, count } => Doc::Retried {
            retried: *count,
            ids,
        },
        Printed::Discarded { id } => Doc::Discarded { discarded: *id },
        Printed::Bench(b) => Doc::Bench(b),
    }
}

fn item_json(i: &ItemRecord) -> ItemJson<'_> {
    ItemJson {
        id: i.id,
        kind: &i.kind,
        lane: &i.lane,
        state: i.state.as_str(),
        priority: i.priority,
        attempt: i.attempt,
        max_attempts: i.max_attempts,
        run_at: time::format(i.run_at),
        fence: i.fence,
        dedupe_key: i.dedupe_key.as_deref(),
        parked_on: i.parked_on.as_deref(),
        last_error: i.last_error.as_deref(),
        payload: &i.payload,
    }
}

fn age(ms: u64) -> String {
    match ms {
        0 => "-".to_owned(),
        ms if ms < 1000 => format!("{ms}ms"),
        ms if ms < 120_000 => format!("{:.1}s", ms as f64 / 1000.0),
        ms if ms < 7_200_000 => format!("{}m", ms / 60_000),
        ms => format!("{}h", ms / 3_600_000),
    }
}

fn status_table(out: &mut dyn Write, lanes: &[LaneStats]) -> io::Result<()> {
    if lanes.is_empty() {
        return writeln!(out, "the queue is empty");
    }
    let width = lanes.iter().map(|l| l.lane.len()).max().unwrap_or(4).max(4);
    write!(out, "{:<width$}", "LANE")?;
    for state in ItemState::ALL {
        write!(out, "  {:>9}", state.as_str().to_uppercase())?;
    }
    writeln!(out, "  OLDEST AVAILABLE")?;
    for l in lanes {
        write!(out, "{:<width$}", l.lane)?;
        for state in ItemState::ALL {
            write!(out, "  {:>9}", l.get(state).count)?;
        }
        writeln!(out, "  {}", age(l.get(ItemState::Available).oldest_age_ms))?;
    }
    Ok(())
}

fn list_table(out: &mut dyn Write, items: &[ItemRecord]) -> io::Result<()> {
    if items.is_empty() {
        return writeln!(out, "no items");
    }
    writeln!(
        out,
        "{:>8}  {:<24}  {:<12}  {:<9}  {:>7}  {:<24}  LAST ERROR",
        "ID", "KIND", "LANE", "STATE", "ATTEMPT", "RUN AT"
    )?;
    for i in items {
        writeln!(
            out,
            "{:>8}  {:<24}  {:<12}  {:<9}  {:>7}  {:<24}  {}",
            i.id,
            i.kind,
            i.lane,
            i.state,
            format!("{}/{}", i.attempt, i.max_attempts),
            time::format(i.run_at),
            i.last_error.as_deref().unwrap_or("-")
        )?;
    }
    Ok(())
}
