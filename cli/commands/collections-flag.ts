// --collections-file, shared by `panoptes apiserver` and `panoptes all-in-one`: the
// collections the operator declares beside the built-in `workloads` and `any`
// (apiserver/collections/definitions.ts), read at start; a file that cannot be used is a
// UsageError (exit code 2), so a typo never silently serves fewer collections.
import { loadCollections, type CollectionDefinition } from '../../apiserver/collections/definitions.ts';
import { UsageError } from '../command.ts';

export const collectionsEnv = 'PANOPTES_COLLECTIONS_FILE';

export const collectionsFlagSpec = { 'collections-file': { type: 'string' } } as const;

export const collectionsFlagHelp = `  --collections-file FILE       collections of several kinds declared beside the built-in workloads and any
                                (kubectl get collectionresources), read at start (env ${collectionsEnv})`;

/** The flag, else the environment variable: the built-in collections and the file's. */
export function collectionsFlag(values: { 'collections-file'?: string }, env: NodeJS.ProcessEnv = process.env): CollectionDefinition[] {
  const file = values['collections-file'] ?? env[collectionsEnv];
  if (file === '') throw new UsageError('--collections-file needs a file path');
  try {
    return loadCollections(file);
  } catch (err) {
    throw new UsageError(`--collections-file ${(err as Error).message}`);
  }
}
