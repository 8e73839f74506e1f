// `panoptes apiserver --storage-read URL[,URL...]` (env PANOPTES_STORAGE_READ) and
// `--storage-read-max-lag DURATION`: PostgreSQL hot standbys lists, gets, external metrics
// and watches read from (storage/read-pool.ts, apiserver/read/rv.ts).
import { parseStorageUrl, StorageUrlError } from '../../storage/connect.ts';
import { durationFlag, UsageError } from '../command.ts';

export const storageReadFlagSpec = {
  'storage-read': { type: 'string' },
  'storage-read-max-lag': { type: 'string' },
} as const;

export const storageReadFlagHelp = `  --storage-read URL[,URL...]   PostgreSQL hot standbys of --storage to read from (env PANOPTES_STORAGE_READ):
                                lists, gets, external metrics and watches; writes stay on --storage.
                                A most-recent read waits until the standby has what the primary had
  --storage-read-max-lag DURATION  a standby further behind than this is skipped for another or for
                                the primary (default 10s)`;

export interface StorageReadFlags {
  urls: string[];
  maxLagMs: number;
}

/** The standby URLs (none: read the primary) and the lag bound; needs PostgreSQL storage. */
export function storageReadFlags(values: { 'storage-read'?: string; 'storage-read-max-lag'?: string }, storage: string): StorageReadFlags {
  const raw = values['storage-read'] ?? process.env.PANOPTES_STORAGE_READ ?? '';
  const urls = raw
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
  const maxLagMs = durationFlag('storage-read-max-lag', values['storage-read-max-lag'], 10_000);
  if (urls.length === 0) return { urls, maxLagMs };
  if (parseStorageUrl(storage).dialect.name !== 'postgres') throw new UsageError('--storage-read needs PostgreSQL --storage: SQLite has no standbys');
  for (const u of urls) {
    let ok = false;
    try {
      ok = parseStorageUrl(u).dialect.name === 'postgres';
    } catch (err) {
      if (!(err instanceof StorageUrlError)) throw err;
    }
    if (!ok) throw new UsageError(`--storage-read takes postgres:// URLs of standbys, separated by commas; got ${JSON.stringify(u.replace(/:[^:@/]*@/, ':***@'))}`);
  }
  return { urls, maxLagMs };
}
