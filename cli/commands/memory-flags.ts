// The apiserver's in-memory caches, sized by flag (apiserver, all-in-one): the watch window
// (the recent changes watches resume from without a query) and the OpenAPI caches (member
// documents parsed, documents built). Each is bounded; these set the bounds.
import type { ApiserverOptions } from '../../apiserver/server.ts';
import { defaultWindowBytes } from '../../apiserver/watch/index.ts';
import { intFlag, sizeFlag, UsageError } from '../command.ts';

export const memoryFlagSpec = {
  'watch-window-events': { type: 'string' },
  'watch-window-bytes': { type: 'string' },
  'watch-prefill': { type: 'string' },
  'openapi-cache-bytes': { type: 'string' },
  'openapi-served-cache-bytes': { type: 'string' },
} as const;

export type MemoryFlagValues = { [K in keyof typeof memoryFlagSpec]?: string };

export const memoryFlagHelp = `  --watch-window-events N       recent changes kept in memory for watches to resume from without a query
                                (default 10000); older ones are read from the change log
  --watch-window-bytes SIZE     and at most about this much memory for them, encodings included (default 1/64 of
                                the V8 heap limit, which follows the memory limit: from 4Mi to 16Mi)
  --watch-prefill N             changes loaded into the window at start (default 1000; at most --watch-window-events)
  --openapi-cache-bytes SIZE    member OpenAPI documents kept parsed, by JSON size (default 24Mi; parsed, they take
                                about 1.6 times that)
  --openapi-served-cache-bytes SIZE  OpenAPI documents built for serving kept (default 64Mi)`;

/** The flags as createApiserver options; bad values are a UsageError. */
export function memoryFlags(values: MemoryFlagValues): Pick<ApiserverOptions, 'watch' | 'openapi'> {
  const maxEvents = intFlag('watch-window-events', values['watch-window-events'], 10_000);
  if (maxEvents < 1) throw new UsageError('--watch-window-events must be at least 1');
  const maxBytes = sizeFlag('watch-window-bytes', values['watch-window-bytes'], defaultWindowBytes());
  if (maxBytes < 1) throw new UsageError('--watch-window-bytes must be at least 1');
  const prefill = intFlag('watch-prefill', values['watch-prefill'], 1000);
  return {
    watch: { window: { maxEvents, maxBytes }, prefill },
    openapi: {
      cacheBytes: sizeFlag('openapi-cache-bytes', values['openapi-cache-bytes'], 24 * 1024 * 1024),
      servedCacheBytes: sizeFlag('openapi-served-cache-bytes', values['openapi-served-cache-bytes'], 64 * 1024 * 1024),
    },
  };
}
