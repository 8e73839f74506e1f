// The opaque `continue` token of a paged list: the snapshot rv every page is read at, the
// last key served, and what is needed for remainingItemCount.
import { StatusError } from '../kube/status.ts';
import { unboundReason } from './bound-values.ts';

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
  /** With orderBy (storage/order-by.ts): the order's signature and the last row's sort values. */
  order?: string;
  sortValues?: string[];
  /** The creationTimestamp range of the first page, resolved once (a duration such as 2h moves). */
  created?: [string | null, string | null];
}

export function encodeContinue(t: ContinueToken): string {
  const k = t.group !== undefined && t.resource !== undefined ? [t.namespace, t.name, t.cluster, t.group, t.resource] : [t.namespace, t.name, t.cluster];
  const body = { v: 1, rv: t.rv, k, t: t.total, s: t.served, o: t.order, sk: t.sortValues, c: t.created };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

export function invalidToken(why: string): StatusError {
  return new StatusError('BadRequest', `continue key is not valid: ${why}`, { causes: [{ reason: 'FieldValueInvalid', field: 'continue', message: why }] });
}

export function decodeContinue(token: string): ContinueToken {
  if (token.length > 4096 || !/^[A-Za-z0-9_-]+$/.test(token)) throw invalidToken('not a token issued by this server');
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw invalidToken('not a token issued by this server');
  }
  const b = body as { v?: unknown; rv?: unknown; k?: unknown; t?: unknown; s?: unknown; o?: unknown; sk?: unknown; c?: unknown };
  const strings = (x: unknown) => Array.isArray(x) && x.every((s) => typeof s === 'string');
  const isCount = (n: unknown) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  if (
    typeof b !== 'object' || b === null || b.v !== 1 || !isCount(b.rv) || (b.rv as number) < 1 ||
    !Array.isArray(b.k) || (b.k.length !== 3 && b.k.length !== 5) || !b.k.every((x) => typeof x === 'string') ||
    !(b.t === undefined || isCount(b.t)) || !isCount(b.s) ||
    !(b.o === undefined || typeof b.o === 'string') || (b.o === undefined) !== (b.sk === undefined) || !(b.sk === undefined || strings(b.sk)) ||
    !(b.c === undefined || (Array.isArray(b.c) && b.c.length === 2 && b.c.every((x) => x === null || typeof x === 'string')))
  ) {
    throw invalidToken('not a token issued by this server');
  }
  // Its strings are bound into SQL: a token this server issued holds none that SQL cannot bind (storage/bound-values.ts).
  const texts = [...(b.k as string[]), ...((b.sk as string[] | undefined) ?? []), ...((b.c as Array<string | null> | undefined) ?? [])];
  if (texts.some((s) => s !== null && unboundReason(s) !== undefined)) throw invalidToken('not a token issued by this server');
  const [namespace, name, cluster, group, resource] = b.k as string[];
  const kind = group !== undefined ? { group, resource } : {};
  const t: ContinueToken = { rv: b.rv as number, namespace, name, cluster, ...kind, total: b.t as number | undefined, served: b.s as number };
  if (b.o !== undefined) {
    t.order = b.o as string;
    t.sortValues = b.sk as string[];
  }
  if (b.c !== undefined) t.created = b.c as [string | null, string | null];
  return t;
}
