// SQLite's WAL checkpoints, off the event loop. A checkpoint copies the pages that commits
// appended to the write-ahead log back into the database file, and syncs the file. By default
// SQLite runs one inside the commit that takes the log past `wal_autocheckpoint` pages (1,000:
// 16 MiB with our 16 KiB pages), and better-sqlite3 runs every statement on the event loop: that
// commit held every watch, list and health check of the process for 10–30 ms (bench:watch: the
// p99 of a commit was 21–25 ms with it, 4–5 ms without; the search indexes added since made
// commits dirty more pages, so checkpoints came more often).
//
// So once the log has grown past `startBytes`, the process's connection stops checkpointing
// (wal_autocheckpoint = 0) and a worker thread with a connection of its own checkpoints every
// `intervalMs` (below: PASSIVE, then RESTART when the log is long). Before that (a small
// database, a test) nothing changes and no thread is started. An in-memory database has no log.
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { logger } from '../lib/log.ts';

export interface CheckpointOptions {
  /** The log's size on disk past which the worker takes over (default 4 MiB). */
  startBytes?: number;
  /** How often the worker checkpoints (default 250 ms). */
  intervalMs?: number;
  /** How often the log's size is looked at until then (default 1 s). */
  checkEveryMs?: number;
  /** The log's length (its frames) past which the worker makes the writer start it again (default startBytes). */
  restartBytes?: number;
}

/** What the worker answers after each checkpoint: PRAGMA wal_checkpoint's columns. */
export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

// The worker: plain JavaScript (no loader), one connection. Each interval a PASSIVE checkpoint
// copies the log back without taking any lock a writer needs. The writer reuses the log from its
// start only if the whole of it had been copied when its next transaction began, which never
// happens while writes follow each other faster than a checkpoint runs (the log grew by 180 MB/s
// in bench:synchro's churn): so when the log holds more than restartBytes, a RESTART checkpoint
// follows, which waits for the writer to finish its transaction, copies the few pages written
// since the PASSIVE one and makes the next transaction start the log again. The writer may wait
// for it (busy_timeout) that long: those pages and one sync of the database file.
const workerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 2000');
let timer;
const pageSize = db.pragma('page_size', { simple: true });
const run = () => {
  try {
    let [r] = db.pragma('wal_checkpoint(PASSIVE)');
    let restarted = false;
    if (r.log * pageSize > workerData.restartBytes) {
      [r] = db.pragma('wal_checkpoint(RESTART)');
      restarted = r.busy === 0;
    }
    parentPort.postMessage({ result: r, restarted });
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message || err) });
  }
};
run();
timer = setInterval(run, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m === 'stop') {
    clearInterval(timer);
    db.close();
    parentPort.close();
  }
});
`;

export class Checkpointer {
  private worker: Worker | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private last: CheckpointResult | undefined;
  private readonly log = logger('storage.checkpoint');
  /** Checkpoints run by the worker, and those that made the writer start the log again (tests). */
  runs = 0;
  restarts = 0;

  constructor(
    private readonly file: string,
    /** Turns the process connection's own checkpoints off (PRAGMA wal_autocheckpoint = 0). */
    private readonly handOver: () => Promise<void>,
    private readonly opts: CheckpointOptions = {},
  ) {
    this.timer = setInterval(() => this.check(), opts.checkEveryMs ?? 1000);
    this.timer.unref();
  }

  /** Whether the worker checkpoints (the process's connection does not). */
  get active(): boolean {
    return this.worker !== undefined;
  }

  /** The worker's last checkpoint. */
  get lastResult(): CheckpointResult | undefined {
    return this.last;
  }

  private check(): void {
    if (this.stopped || this.worker) return;
    let size = 0;
    try {
      size = statSync(`${this.file}-wal`).size;
    } catch {
      return; // no log yet
    }
    if (size >= (this.opts.startBytes ?? 4 * 1024 * 1024)) this.start();
  }

  /** Starts the worker now (normally when the log has grown past startBytes). */
  start(): void {
    if (this.stopped || this.worker) return;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const restartBytes = this.opts.restartBytes ?? this.opts.startBytes ?? 4 * 1024 * 1024;
    const worker = new Worker(workerSource, { eval: true, execArgv: [], workerData: { driver, file: this.file, intervalMs: this.opts.intervalMs ?? 250, restartBytes } });
    this.worker = worker;
    worker.unref();
    worker.on('message', (m: { result?: CheckpointResult; restarted?: boolean; error?: string }) => {
      if (m.result) {
        this.runs++;
        if (m.restarted) this.restarts++;
        this.last = m.result;
      } else if (m.error) this.log.warn('WAL checkpoint failed; the next one tries again', { error: m.error });
    });
    worker.on('error', (err) => this.log.warn('WAL checkpoint worker failed; the connection checkpoints itself again', { err }));
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = undefined;
    });
    this.handOver().catch((err: Error) => this.log.warn('could not turn the connection\'s own checkpoints off', { err }));
  }

  /** Stops the worker (before the process's connection closes, which then checkpoints what is left). */
  async close(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    const w = this.worker;
    if (!w) return;
    const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
    w.postMessage('stop');
    const timeout = setTimeout(() => void w.terminate(), 5000);
    await exited;
    clearTimeout(timeout);
  }
}
