// Regenerates apiserver/reference/*.json and kube/reference/table-columns.json from a captured
// kube-apiserver reference directory (given as the argument; the design notes keep one, reference/kube-1.28): built-in
// resource metadata (for discovery when synchro recorded none), Table column definitions per
// resource (kube/table.ts, used by Panoptes and the simulated clusters), and the OpenAPI
// definitions of the object and list metadata (ObjectMeta, ListMeta, WatchEvent and what they
// refer to) that the Cluster kind and schemas of kinds no member described refer to.
//   node --import tsx hack/gen-apiserver-reference.ts REFERENCE_DIR
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { closure, namedSchemas, type JsonObject } from '../kube/openapi-convert.ts';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node --import tsx hack/gen-apiserver-reference.ts REFERENCE_DIR (a captured kube-apiserver reference, e.g. reference/kube-1.28 of the design notes)');
  process.exit(2);
}
const out = new URL('../apiserver/reference/', import.meta.url);

interface Res { name: string; singularName?: string; namespaced: boolean; kind: string; group?: string; version?: string; verbs?: string[]; shortNames?: string[]; categories?: string[] }
const builtin: Record<string, Array<Omit<Res, 'verbs'>>> = {};
// What the proxy serves of each built-in resource in a one-cluster view (apiserver/proxy/discovery.ts): kube's verbs and subresources.
const verbs: Record<string, Record<string, { verbs: string[]; subresources: Array<{ name: string; verbs: string[]; kind: string; group?: string; version?: string }> }>> = {};
for (const f of readdirSync(join(dir, 'discovery')).sort()) {
  const doc = JSON.parse(readFileSync(join(dir, 'discovery', f), 'utf8')) as { groupVersion: string; resources: Res[] };
  builtin[doc.groupVersion] = doc.resources
    .filter((r) => !r.name.includes('/') && (r.verbs ?? []).includes('list'))
    .map((r) => ({ name: r.name, singularName: r.singularName, namespaced: r.namespaced, kind: r.kind, ...(r.shortNames ? { shortNames: r.shortNames } : {}), ...(r.categories ? { categories: r.categories } : {}) }));
  const gv: (typeof verbs)[string] = {};
  for (const r of doc.resources) {
    const [resource, sub] = r.name.split('/');
    if (!sub) gv[resource] = { verbs: r.verbs ?? [], subresources: gv[resource]?.subresources ?? [] };
    else (gv[resource] ??= { verbs: [], subresources: [] }).subresources.push({ name: sub, verbs: r.verbs ?? [], kind: r.kind, ...(r.group !== undefined ? { group: r.group, version: r.version } : {}) });
  }
  verbs[doc.groupVersion] = gv;
}
writeFileSync(new URL('builtin-resources.json', out), JSON.stringify(builtin, null, 1) + '\n');
writeFileSync(new URL('builtin-verbs.json', out), JSON.stringify(verbs, null, 1) + '\n');

const tables = JSON.parse(readFileSync(join(dir, 'table-columns.json'), 'utf8')) as Record<string, { kind?: string; columnDefinitions?: unknown[] }>;
const columns: Record<string, unknown[]> = {};
for (const [gvr, t] of Object.entries(tables)) {
  if (!t.columnDefinitions) continue;
  const parts = gvr.split('/');
  const key = parts.length === 2 ? `/${parts[1]}` : `${parts[0]}/${parts[2]}`;
  columns[key] = t.columnDefinitions; // later versions of a group win (sorted keys: v1beta2 < v1beta3, v1 < v2)
}
writeFileSync(new URL('../kube/reference/table-columns.json', import.meta.url), JSON.stringify(columns, null, 1) + '\n');
const openapi = JSON.parse(readFileSync(join(dir, 'openapi-v2.json'), 'utf8')) as JsonObject;
const defs = namedSchemas(openapi, 'v2');
const roots = ['ObjectMeta', 'ListMeta', 'WatchEvent'].map((k) => `io.k8s.apimachinery.pkg.apis.meta.v1.${k}`);
const meta = Object.fromEntries(closure(defs, roots, 'v2').map((n) => [n, defs[n]]));
writeFileSync(new URL('openapi-meta.json', out), JSON.stringify({ source: (openapi.info as JsonObject).version, definitions: meta }, null, 1) + '\n');
console.log(`wrote ${Object.keys(builtin).length} group versions, ${Object.keys(columns).length} column sets, ${Object.keys(meta).length} OpenAPI definitions`);
