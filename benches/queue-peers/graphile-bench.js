// Graphile Worker drain benchmark for benches/queue-peers.sh.
//
//   node graphile-bench.js DATABASE_URL JOBS [CONCURRENCY] [LOCAL_QUEUE]
//
// Migrates Graphile's schema in the (fresh) database, enqueues JOBS no-op jobs with one
// `addJobs` call (one `add_jobs` statement), then starts one in-process runner with
// `concurrentJobs` CONCURRENCY and `localQueue.size` LOCAL_QUEUE (the "tuned" config the
// queue research measured: also `completeJobBatchDelay: 0`, `failJobBatchDelay: 0`) and
// times from just before `run()` until the JOBS-th `job:success` event. Prints one JSON line.
"use strict";
const { run, makeWorkerUtils, Logger } = require("graphile-worker");

async function main() {
  const [url, jobsArg, concArg, lqArg] = process.argv.slice(2);
  if (!url || !jobsArg) {
    throw new Error("usage: graphile-bench.js DATABASE_URL JOBS [CONCURRENCY] [LOCAL_QUEUE]");
  }
  const jobs = Number(jobsArg);
  const concurrency = Number(concArg || 10);
  const localQueue = Number(lqArg || 500);
  const quiet = new Logger(() => () => {});
  const preset = {
    worker: {
      connectionString: url,
      concurrentJobs: concurrency,
      maxPoolSize: 10,
      localQueue: { size: localQueue },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
    },
  };
  const utils = await makeWorkerUtils({ connectionString: url, logger: quiet });
  try {
    await utils.migrate();
    const specs = [];
    for (let i = 0; i < jobs; i++) specs.push({ identifier: "noop", payload: { i } });
    const t0 = process.hrtime.bigint();
    await utils.addJobs(specs);
    const enqueueMs = Number(process.hrtime.bigint() - t0) / 1e6;

    let done = 0;
    let finish;
    const allDone = new Promise((resolve) => (finish = resolve));
    const t1 = process.hrtime.bigint();
    const runner = await run({
      preset,
      logger: quiet,
      taskList: { noop: async () => {} },
    });
    runner.events.on("job:success", () => {
      done += 1;
      if (done === jobs) finish(process.hrtime.bigint());
    });
    const t2 = await allDone;
    const drainMs = Number(t2 - t1) / 1e6;
    await runner.stop();
    const left = await utils.withPgClient((c) =>
      c.query("select count(*)::int as n from graphile_worker.jobs"),
    );
    console.log(
      JSON.stringify({
        peer: "graphile-worker",
        version: require("graphile-worker/package.json").version,
        jobs,
        concurrency,
        local_queue: localQueue,
        enqueue_ms: Math.round(enqueueMs),
        drain_ms: Math.round(drainMs),
        jobs_per_sec: Math.floor(jobs / (drainMs / 1000)),
        left_in_queue: left.rows[0].n,
      }),
    );
  } finally {
    await utils.release();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
