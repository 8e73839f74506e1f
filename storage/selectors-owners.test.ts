// The property test of storage/selectors.test.ts for owner chains and JSON path terms: random
// owner graphs (uids repeated across clusters, references across namespaces, cycles) and
// random documents, each query answered by SQL and by an in-memory evaluation written apart
// from storage/owners.ts (a walk up each object's references), on every backend.
import t from 'tap';
import { prng } from '../hack/testing/prng.ts';
import { objectMatches } from './filters.ts';
import type { JsonFieldRequirement } from './json-fields.ts';
import { maxOwnerDepth } from './owners.ts';
import { backends, openTestStore, stopTestPostgres } from './testing.ts';
import type { KubeObject, ListQuery, OwnerQuery, StoredObject, UpstreamEvent } from './types.ts';

t.teardown(stopTestPostgres);

const seed = Number(process.env.SELECTOR_SEED ?? 20261201);
const kinds = [
  { group: 'apps', resource: 'deployments', kind: 'Deployment', prefix: 'd', n: 4 },
  { group: 'apps', resource: 'replicasets', kind: 'ReplicaSet', prefix: 'r', n: 8 },
  { group: '', resource: 'nodes', kind: 'Node', prefix: 'n', n: 2 },
  { group: '', resource: 'pods', kind: 'Pod', prefix: 'p', n: 60 },
];
const images = ['nginx', 'redis', 'envoy', '3', ''];

function fleet(rnd: () => number, cluster: string): UpstreamEvent[] {
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  // Uids repeat across clusters: a chain must not cross into another cluster.
  const uidOf = (prefix: string, i: number) => `${prefix}-uid-${i}`;
  const events: UpstreamEvent[] = [];
  for (const k of kinds) {
    for (let i = 0; i < k.n; i++) {
      const namespace = k.resource === 'nodes' ? '' : `ns-${Math.floor(rnd() * 2)}`;
      const parent = k.resource === 'deployments' ? (rnd() < 0.2 ? pick(['r', 'd']) : undefined) : k.resource === 'replicasets' ? pick(['d', 'd', 'd', 'r', undefined]) : k.resource === 'pods' ? pick(['r', 'r', 'd', 'n', undefined]) : undefined;
      const parentKind = kinds.find((x) => x.prefix === parent);
      const ownerReferences = parentKind
        ? [{ apiVersion: parentKind.group ? `${parentKind.group}/v1` : 'v1', kind: parentKind.kind, name: `${parent}-${Math.floor(rnd() * parentKind.n)}`, uid: uidOf(parent!, Math.floor(rnd() * parentKind.n)), controller: rnd() < 0.9 }]
        : undefined;
      const containers = rnd() < 0.8 ? Array.from({ length: Math.floor(rnd() * 3) }, () => (rnd() < 0.1 ? pick(images) : { image: rnd() < 0.1 ? null : pick(images) })) : { image: pick(images) };
      const object: KubeObject = {
        apiVersion: k.group ? `${k.group}/v1` : 'v1',
        kind: k.kind,
        metadata: { name: `${k.prefix}-${i}`, ...(namespace ? { namespace } : {}), uid: uidOf(k.prefix, i), resourceVersion: String(i + 1), ...(ownerReferences ? { ownerReferences } : {}), ...(rnd() < 0.5 ? { annotations: { 'example.com/tier': pick(['a', 'b', '']) } } : {}) },
        spec: { containers, ...(rnd() < 0.7 ? { replicas: pick([1, 3, '3', true, null, { n: 1 }]) } : {}) },
      };
      events.push({ type: 'ADDED', group: k.group, version: 'v1', resource: k.resource, object });
    }
  }
  void cluster;
  return events;
}

type Stored = { key: StoredObject; obj: KubeObject };

/** Whether `o`'s owner chain reaches an owner `q` names exactly `seniority` levels up (or any), by walking up its references. */
function reaches(all: Stored[], o: Stored, q: OwnerQuery): boolean {
  const ref = (x: KubeObject) => {
    const refs = x.metadata?.ownerReferences ?? [];
    return (refs.find((r) => r.controller) ?? refs[0])?.uid;
  };
  const named = (p: Stored) => (q.uids ? q.uids.includes(p.key.uid) : p.key.group === q.group && p.key.resource === q.resource && q.names!.includes(p.key.name));
  const levels = q.seniority === 'any' ? Array.from({ length: maxOwnerDepth }, (_, i) => i) : [q.seniority];
  // Parents of x: same cluster, the uid of its reference, and a namespace the reference holds in.
  const parents = (x: Stored) => all.filter((p) => p.key.cluster === x.key.cluster && p.key.uid === ref(x.obj) && (p.key.namespace === '' || p.key.namespace === x.key.namespace));
  let frontier = parents(o);
  for (let level = 0; level <= Math.max(...levels); level++) {
    if (levels.includes(level) && frontier.some(named)) return true;
    frontier = frontier.flatMap(parents);
  }
  return false;
}

function randomQuery(rnd: () => number): ListQuery {
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  const target = pick(kinds.filter((k) => k.resource !== 'nodes'));
  const q: ListQuery = { group: target.group, resource: target.resource };
  const seniority = pick<OwnerQuery['seniority']>([0, 0, 1, 1, 2, 'any']);
  if (rnd() < 0.8) {
    const owner = pick(kinds.filter((k) => k.resource !== 'pods'));
    q.owners =
      rnd() < 0.7
        ? { names: Array.from({ length: 1 + Math.floor(rnd() * 2) }, () => `${owner.prefix}-${Math.floor(rnd() * owner.n)}`), group: owner.group, resource: owner.resource, seniority }
        : { uids: [`${owner.prefix}-uid-${Math.floor(rnd() * owner.n)}`], seniority };
  }
  if (rnd() < 0.6 || !q.owners) {
    const path: JsonFieldRequirement['path'] = pick([['spec', 'containers', null, 'image'], ['spec', 'containers', null], ['spec', 'containers', 'image'], ['spec', 'replicas'], ['metadata', 'annotations', 'example.com/tier']]);
    const operator = pick<JsonFieldRequirement['operator']>(['in', 'notin', 'exists', '!']);
    const values = operator === 'in' || operator === 'notin' ? [pick([...images, '1', 'true', 'a'])] : [];
    q.jsonFields = [{ path, operator, values }];
  }
  if (rnd() < 0.2) q.clusters = [pick(['c1', 'c2'])];
  if (rnd() < 0.2) q.namespaces = [pick(['ns-0', 'ns-1'])];
  return q;
}

for (const backend of backends) {
  t.test(`${backend}: owner chains and JSON path terms, SQL and in memory`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const rnd = prng(seed);
    for (const c of ['c1', 'c2']) await store.applyBatch(c, fleet(rnd, c));
    const all: Stored[] = [];
    for (const k of kinds) all.push(...(await store.list({ group: k.group, resource: k.resource })).items.map((key) => ({ key, obj: JSON.parse(key.object) as KubeObject })));
    t.equal(all.length, 2 * kinds.reduce((n, k) => n + k.n, 0));

    const rounds = 150;
    let discriminating = 0;
    for (let i = 0; i < rounds; i++) {
      const q = randomQuery(rnd);
      const sql = (await store.list(q)).items.map((o) => `${o.cluster}/${o.namespace}/${o.name}`).sort();
      const candidates = all.filter((o) => o.key.group === q.group && o.key.resource === q.resource);
      const js = candidates
        .filter((o) => objectMatches({ ...q, owners: undefined }, o.key, o.obj) && (!q.owners || reaches(all, o, q.owners)))
        .map((o) => `${o.key.cluster}/${o.key.namespace}/${o.key.name}`)
        .sort();
      if (sql.join() !== js.join()) {
        t.same(sql, js, `seed ${seed}, round ${i}: ${JSON.stringify(q)}`);
        return;
      }
      if (sql.length > 0 && sql.length < candidates.length) discriminating++;
    }
    t.pass(`${rounds} random queries agree`);
    t.ok(discriminating > rounds / 5, `the queries discriminate (${discriminating} of ${rounds} selected some but not all)`);
  });
}
