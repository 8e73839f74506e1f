// Shared flags and storage opening of the long-running processes (all-in-one, apiserver,
// synchro: see their own files) and `panoptes migrate`.
import { defaultStorageUrl, describeStorageError, displayStorageUrl, isStorageUnreachable, parseStorageUrl, StorageUrlError } from '../../storage/connect.ts';
import { Backoff, sleep } from '../../lib/backoff.ts';
import { Store } from '../../storage/store.ts';
import { logger, setLogLevel, type Level } from '../../lib/log.ts';
import { durationFlag, ExitError, parseFlags, UsageError, type Command } from '../command.ts';
import { summaries } from './summaries.ts';

const storageFlag = {
  storage: { type: 'string' },
  'storage-wait': { type: 'string' },
  'log-level': { type: 'string' },
} as const;

/** How long a process waits at start for a database that does not answer (--storage-wait). */
export const defaultStorageWaitMs = 2 * 60_000;

export const storageWaitFlagHelp = `  --storage-wait D              at start, how long to retry a database that does not answer, with
                                backoff, one log line per attempt (default 2m; 0s: fail at once); then exit 1`;

const storageHelp = `  --storage URL      where state and the change log live (env PANOPTES_STORAGE)
                     sqlite:PATH (default ${defaultStorageUrl}) or postgres://user@host:5432/db
  --storage-wait D   how long to retry a database that does not answer (default 2m; 0s: fail at once)
  --log-level LEVEL  debug, info (default), warn or error`;

/** Reads the flags every process shares; bad values are a UsageError. */
export function commonFlags(values: { storage?: string; 'storage-wait'?: string; 'log-level'?: string }): { storage: string; storageWaitMs: number } {
  const storage = values.storage ?? process.env.PANOPTES_STORAGE ?? defaultStorageUrl;
  try {
    parseStorageUrl(storage);
  } catch (err) {
    if (err instanceof StorageUrlError) throw new UsageError(err.message);
    throw err;
  }
  const storageWaitMs = durationFlag('storage-wait', values['storage-wait'], defaultStorageWaitMs);
  const level = values['log-level'];
  if (level !== undefined) {
    if (!['debug', 'info', 'warn', 'error'].includes(level)) throw new UsageError(`--log-level must be debug, info, warn or error, got ${JSON.stringify(level)}`);
    setLogLevel(level as Level);
  }
  return { storage, storageWaitMs };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * Opens storage (applying migrations) and says where. A database that does not answer
 * (refused, unresolved, starting up: storage/connect.ts isStorageUnreachable) is tried again
 * with backoff (0.5 s doubling to 15 s), one log line per attempt naming the URL without its
 * password and the reason, for up to `waitMs`; then, or at once for any other failure, one
 * line and exit 1 (ExitError). SIGINT or SIGTERM meanwhile stops the wait: exit 0.
 */
export async function openStorage(storage: string, component: string, waitMs = defaultStorageWaitMs): Promise<Store> {
  const log = logger(component);
  const display = displayStorageUrl(storage);
  const backoff = new Backoff({ initialMs: 500, maxMs: 15_000, jitter: 0.2 });
  const started = performance.now();
  const stop = new AbortController();
  const onSignal = (sig: string) => {
    log.info('stopping while waiting for storage', { signal: sig, storage: display });
    stop.abort();
  };
  try {
    for (let attempt = 1; ; attempt++) {
      let store: Store;
      try {
        store = await Store.open(storage);
      } catch (err) {
        const reason = describeStorageError(err);
        if (!isStorageUnreachable(err)) {
          log.error(`storage ${display} failed: ${reason}`, { storage: display, reason });
          throw new ExitError(1, reason);
        }
        const left = waitMs - (performance.now() - started);
        if (left <= 0) {
          log.error(`storage ${display} unreachable: ${reason}; gave up after ${attempt} attempt${attempt === 1 ? '' : 's'} in ${seconds(performance.now() - started)} (--storage-wait ${seconds(waitMs)})`, { storage: display, reason, attempt });
          throw new ExitError(1, reason);
        }
        const delay = Math.round(Math.min(backoff.next(), left));
        log.warn(`storage ${display} unreachable: ${reason}; retrying in ${seconds(delay)}`, { storage: display, reason, attempt, retryInMs: delay, waitedMs: Math.round(performance.now() - started), waitMs });
        if (attempt === 1) {
          process.on('SIGINT', onSignal);
          process.on('SIGTERM', onSignal);
        }
        await sleep(delay, stop.signal);
        if (stop.signal.aborted) throw new ExitError(0, 'stopped while waiting for storage');
        continue;
      }
      log.info('storage ready', { storage: store.conn.display, dialect: store.dialect, watermark: await store.watermark(), ...(attempt > 1 ? { attempts: attempt } : {}) });
      return store;
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

export const migrate: Command = {
  name: 'migrate',
  summary: summaries.migrate,
  usage:
    `Usage: panoptes migrate [flags]\n\nCreates or upgrades the storage schema and exits. Every process also does this at start.\n\nFlags:\n${storageHelp}\n` +
    `  --parallel-writes  PostgreSQL: switch a database created before parallel writes to them (synchro members then
                     write in parallel, in one rv order). Run it once every Panoptes process that writes to the
                     database runs this version: a process of an earlier one writes with the lock taken first
                     and must not run beside parallel writers. A database created by this version writes in
                     parallel already.`,
  async run(argv) {
    const { values } = parseFlags(argv, { ...storageFlag, 'parallel-writes': { type: 'boolean' } });
    const { storage, storageWaitMs } = commonFlags(values);
    const store = await openStorage(storage, 'migrate', storageWaitMs);
    try {
      if (values['parallel-writes']) {
        if (store.dialect !== 'postgres') throw new UsageError('--parallel-writes is for PostgreSQL: SQLite has one writer');
        const switched = await store.enableParallelWrites();
        logger('migrate').info(switched ? 'switched to parallel writes' : 'the database writes in parallel already', { storage: store.conn.display });
      }
    } finally {
      await store.close();
    }
    return 0;
  },
};
