// The budget of lists that read their objects' documents (storage/json-fields.ts), by flag
// (apiserver, all-in-one): how many objects their terms on unindexed JSON paths may read, how
// many bytes of documents such a list (or an orderBy on a JSON path) may read, and on
// PostgreSQL how long each of its statements may run.
import type { ApiserverLimits } from '../../apiserver/endpoints/deps.ts';
import { defaultQueryBudget } from '../../storage/json-fields.ts';
import { durationFlag, intFlag, sizeFlag, UsageError } from '../command.ts';

export const queryBudgetFlagSpec = {
  'field-path-max-objects': { type: 'string' },
  'field-path-max-bytes': { type: 'string' },
  'field-path-timeout': { type: 'string' },
} as const;

export type QueryBudgetFlagValues = { [K in keyof typeof queryBudgetFlagSpec]?: string };

export const queryBudgetFlagHelp = `  --field-path-max-objects N    a list with field selector terms on unindexed JSON paths reads at most N objects'
                                documents; more is a 400 asking to narrow it (default ${defaultQueryBudget.rows})
  --field-path-max-bytes SIZE   and such a list, or one ordered by a JSON path, at most SIZE of documents; more is
                                a 400 (default ${defaultQueryBudget.bytes / (1024 * 1024)}Mi: SQLite reads them on the event loop)
  --field-path-timeout DURATION and, on PostgreSQL, each of its statements at most this long, then 504 (default ${defaultQueryBudget.ms / 1000}s)`;

/** The flags as apiserver limits; bad values are a UsageError. */
export function queryBudgetFlags(values: QueryBudgetFlagValues): Pick<ApiserverLimits, 'queryBudget'> {
  const rows = intFlag('field-path-max-objects', values['field-path-max-objects'], defaultQueryBudget.rows);
  if (rows < 1) throw new UsageError('--field-path-max-objects must be at least 1');
  const bytes = sizeFlag('field-path-max-bytes', values['field-path-max-bytes'], defaultQueryBudget.bytes);
  if (bytes < 1) throw new UsageError('--field-path-max-bytes must be at least 1');
  const ms = durationFlag('field-path-timeout', values['field-path-timeout'], defaultQueryBudget.ms);
  if (ms < 1) throw new UsageError('--field-path-timeout must be at least 1ms');
  return { queryBudget: { rows, bytes, ms } };
}
