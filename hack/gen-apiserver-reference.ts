// Regenerates apiserver/reference/builtin-resources.json and kube/reference/table-columns.json
// from a captured kube-apiserver reference directory (default /work/shared/reference/kube-1.28):
// built-in resource metadata (for discovery when synchro recorded none) and Table column
// definitions per resource (kube/table.ts, used by Panoptes and the simulated clusters).
//   node --import tsx hack/gen-apiserver-reference.ts [REFERENCE_DIR]
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2] ?? '/work/shared/reference/kube-1.28';
const out = new URL('../apiserver/reference/', import.meta.url);

interface Res { name: string; singularName?: string; namespaced: boolean; kind: string; verbs?: string[]; shortNames?: string[]; categories?: string[] }
const builtin: Record<string, Array<Omit<Res, 'verbs'>>> = {};
for (const f of readdirSync(join(dir, 'discovery')).sort()) {
  const doc = JSON.parse(readFileSync(join(dir, 'discovery', f), 'utf8')) as { groupVersion: string; resources: Res[] };
  builtin[doc.groupVersion] = doc.resources
    .filter((r) => !r.name.includes('/') && (r.verbs ?? []).includes('list'))
    .map((r) => ({ name: r.name, singularName: r.singularName, namespaced: r.namespaced, kind: r.kind, ...(r.shortNames ? { shortNames: r.shortNames } : {}), ...(r.categories ? { categories: r.categories } : {}) }));
}
writeFileSync(new URL('builtin-resources.json', out), JSON.stringify(builtin, null, 1) + '\n');

const tables = JSON.parse(readFileSync(join(dir, 'table-columns.json'), 'utf8')) as Record<string, { kind?: string; columnDefinitions?: unknown[] }>;
const columns: Record<string, unknown[]> = {};
for (const [gvr, t] of Object.entries(tables)) {
  if (!t.columnDefinitions) continue;
  const parts = gvr.split('/');
  const key = parts.length === 2 ? `/${parts[1]}` : `${parts[0]}/${parts[2]}`;
  columns[key] = t.columnDefinitions; // later versions of a group win (sorted keys: v1beta2 < v1beta3, v1 < v2)
}
writeFileSync(new URL('../kube/reference/table-columns.json', import.meta.url), JSON.stringify(columns, null, 1) + '\n');
console.log(`wrote ${Object.keys(builtin).length} group versions, ${Object.keys(columns).length} column sets`);
