// Shared flags and storage opening of the long-running processes (all-in-one, apiserver,
// synchro: see their own files) and `panoptes migrate`.
import { defaultStorageUrl, parseStorageUrl, StorageUrlError } from '../../storage/connect.ts';
import { Store } from '../../storage/store.ts';
import { logger, setLogLevel, type Level } from '../../lib/log.ts';
import { parseFlags, UsageError, type Command } from '../command.ts';
import { summaries } from './summaries.ts';

const storageFlag = {
  storage: { type: 'string' },
  'log-level': { type: 'string' },
} as const;

const storageHelp = `  --storage URL      where state and the change log live (env PANOPTES_STORAGE)
                     sqlite:PATH (default ${defaultStorageUrl}) or postgres://user@host:5432/db
  --log-level LEVEL  debug, info (default), warn or error`;

/** Reads the flags every process shares; bad values are a UsageError. */
export function commonFlags(values: { storage?: string; 'log-level'?: string }): { storage: string } {
  const storage = values.storage ?? process.env.PANOPTES_STORAGE ?? defaultStorageUrl;
  try {
    parseStorageUrl(storage);
  } catch (err) {
    if (err instanceof StorageUrlError) throw new UsageError(err.message);
    throw err;
  }
  const level = values['log-level'];
  if (level !== undefined) {
    if (!['debug', 'info', 'warn', 'error'].includes(level)) throw new UsageError(`--log-level must be debug, info, warn or error, got ${JSON.stringify(level)}`);
    setLogLevel(level as Level);
  }
  return { storage };
}

/** Opens storage (applying migrations) and says where. */
export async function openStorage(storage: string, component: string): Promise<Store> {
  const log = logger(component);
  const store = await Store.open(storage);
  log.info('storage ready', { storage: store.conn.display, dialect: store.dialect, watermark: await store.watermark() });
  return store;
}

export const migrate: Command = {
  name: 'migrate',
  summary: summaries.migrate,
  usage: `Usage: panoptes migrate [flags]\n\nCreates or upgrades the storage schema and exits. Every process also does this at start.\n\nFlags:\n${storageHelp}`,
  async run(argv) {
    const { values } = parseFlags(argv, storageFlag);
    const { storage } = commonFlags(values);
    const store = await openStorage(storage, 'migrate');
    await store.close();
    return 0;
  },
};
