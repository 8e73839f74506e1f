// fuzzyName: a substring that names must hold, ASCII case-insensitively (storage/name-contains.ts).
// As `fuzzyName=web` (repeatable: every one must hold) or `search.panoptes.io/fuzzyName=web`.
import { badRequest } from '../../kube/status.ts';
import { minNeedleLength } from '../../storage/name-contains.ts';


/**
 * A substring of at least 3 characters of the set object names are made of. Trigram indexes
 * serve nothing shorter: a one- or two-character substring would read every object of the
 * resource, so it is refused rather than served by a scan (narrow by names, namespaces or
 * labels instead). PostgreSQL's pg_trgm takes only letters and digits into trigrams: the
 * needle must hold three of them in a row, else its index would read every entry.
 */
export function parseFuzzyName(value: string, source: string): string {
  if (value.length > 253 || !/^[A-Za-z0-9._:-]*$/.test(value)) {
    throw badRequest(`${source}: ${JSON.stringify(value.slice(0, 64))} is not a name substring: use up to 253 letters, digits, '.', '_', ':' or '-'`);
  }
  if (value.length < minNeedleLength || !/[A-Za-z0-9]{3}/.test(value)) {
    throw badRequest(`${source}: ${JSON.stringify(value)} is too short: a fuzzy name needs ${minNeedleLength} letters or digits in a row (its index holds trigrams; a shorter one would read every object)`);
  }
  return value;
}
