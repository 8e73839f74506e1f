// orderBy (storage/order-by.ts): `orderBy=creationTimestamp desc,name` — keys separated by
// commas (or repeated parameters), each `name`, `namespace`, `cluster`, `creationTimestamp`
// (also as metadata.name, metadata.namespace, metadata.creationTimestamp) or a JSON path
// (`status.phase`, `metadata.labels['app.kubernetes.io/name']`), then optionally ` asc` or ` desc`.
// As a label value, `search.panoptes.io/orderBy=creationTimestamp_desc`: one key (a label
// selector's values are a set, without order), `_asc` / `_desc` after it.
import { badRequest } from '../../kube/status.ts';
import { maxSqlDepth } from '../../storage/sql-values.ts';
import type { OrderKey } from '../../storage/types.ts';


/** At most this many keys: each is a sort column of the page query. */
export const maxOrderKeys = 5;

const fixed: Record<string, OrderKey['key']> = {
  name: 'name',
  'metadata.name': 'name',
  namespace: 'namespace',
  'metadata.namespace': 'namespace',
  cluster: 'cluster',
  creationTimestamp: 'creationTimestamp',
  'metadata.creationTimestamp': 'creationTimestamp',
};

/** `a.b['c/d'].e` → ['a', 'b', 'c/d', 'e'], or undefined when it is not one. */
function parsePath(text: string): string[] | undefined {
  const path: string[] = [];
  const re = /(?:^|\.)([A-Za-z0-9_-]+)|\['([^'"\\\u0000-\u001f]+)'\]/y;
  let pos = 0;
  while (pos < text.length) {
    re.lastIndex = pos;
    const m = re.exec(text);
    if (!m) return undefined;
    path.push(m[1] ?? m[2]);
    pos = re.lastIndex;
  }
  return path.length > 0 && path.length < maxSqlDepth ? path : undefined;
}

function parseKey(text: string, desc: boolean, source: string): OrderKey {
  const key = fixed[text];
  if (key) return { key, desc };
  const path = parsePath(text);
  if (!path) throw badRequest(`${source}: ${JSON.stringify(text.slice(0, 128))} is not a sort key: use name, namespace, cluster, creationTimestamp or a JSON path such as status.phase`);
  return { key: 'path', path, desc };
}

/** Query parameter values: comma-separated keys, each with an optional ` asc` / ` desc`. */
export function parseOrderBy(values: string[], source: string): OrderKey[] {
  const keys: OrderKey[] = [];
  for (const part of values.flatMap((v) => v.split(','))) {
    const m = /^\s*(\S+)(?:\s+(asc|desc))?\s*$/i.exec(part);
    if (!m) throw badRequest(`${source}: ${JSON.stringify(part.slice(0, 128))} is not a sort key: use <key> [asc|desc], e.g. creationTimestamp desc`);
    keys.push(parseKey(m[1], m[2]?.toLowerCase() === 'desc', source));
  }
  return checked(keys, source);
}

/** A label value: one key, `_asc` / `_desc` after it. */
export function parseOrderByLabel(value: string, source: string): OrderKey[] {
  const m = /^(.*?)(?:_(asc|desc))?$/.exec(value)!;
  return checked([parseKey(m[1], m[2] === 'desc', source)], source);
}

function checked(keys: OrderKey[], source: string): OrderKey[] {
  if (keys.length === 0 || keys.length > maxOrderKeys) throw badRequest(`${source}: give between 1 and ${maxOrderKeys} sort keys`);
  return keys;
}

/** The order that is the list order anyway (namespace ascending): no orderBy at all. */
export function effectiveOrder(keys: OrderKey[] | undefined): OrderKey[] | undefined {
  if (!keys || (keys.length === 1 && keys[0].key === 'namespace' && !keys[0].desc)) return undefined;
  return keys;
}
