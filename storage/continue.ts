// The opaque `continue` token of a paged list: the snapshot rv every page is read at, the
// last key served, and what is needed for remainingItemCount.
import { StatusError } from '../kube/status.ts';

export interface ContinueToken {
  /** The snapshot rv of the first page. */
  rv: number;
  /** The last key served: list order is namespace, name, cluster. */
  namespace: string;
  name: string;
  cluster: string;
  /** A collection's: the kind of the last item (storage/collection.ts). */
  group?: string;
  resource?: string;
  /** Matching items in the whole snapshot, when counted. */
  total?: number;
  /** Items served by the pages so far. */
  served: number;
}

export function encodeContinue(t: ContinueToken): string {
  const k = t.group !== undefined && t.resource !== undefined ? [t.namespace, t.name, t.cluster, t.group, t.resource] : [t.namespace, t.name, t.cluster];
  const body = { v: 1, rv: t.rv, k, t: t.total, s: t.served };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

export function invalidContinue(why: string): StatusError {
  return new StatusError('BadRequest', `continue key is not valid: ${why}`, { causes: [{ reason: 'FieldValueInvalid', field: 'continue', message: why }] });
}

export function decodeContinue(token: string): ContinueToken {
  if (token.length > 4096 || !/^[A-Za-z0-9_-]+$/.test(token)) throw invalidContinue('not a token issued by this server');
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw invalidContinue('not a token issued by this server');
  }
  const b = body as { v?: unknown; rv?: unknown; k?: unknown; t?: unknown; s?: unknown };
  const isCount = (n: unknown) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  if (
    typeof b !== 'object' || b === null || b.v !== 1 || !isCount(b.rv) || (b.rv as number) < 1 ||
    !Array.isArray(b.k) || (b.k.length !== 3 && b.k.length !== 5) || !b.k.every((x) => typeof x === 'string') ||
    !(b.t === undefined || isCount(b.t)) || !isCount(b.s)
  ) {
    throw invalidContinue('not a token issued by this server');
  }
  const [namespace, name, cluster, group, resource] = b.k as string[];
  const kind = group !== undefined ? { group, resource } : {};
  return { rv: b.rv as number, namespace, name, cluster, ...kind, total: b.t as number | undefined, served: b.s as number };
}
