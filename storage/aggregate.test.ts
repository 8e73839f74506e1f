// Aggregates in SQL (storage/aggregate.ts) against the same computation in memory, on both
// backends: random objects whose JSON paths hold integers, fractions, strings that look like
// numbers, booleans, null, objects or nothing, and random queries (list filters, JSON
// conditions, every function, per cluster or not).
import t from 'tap';
import { prng } from '../hack/testing/prng.ts';
import { parseLabelSelector } from '../kube/labels.ts';
import type { AggregateFunction, AggregateQuery, JsonRequirement } from './aggregate.ts';
import { objectMatches } from './filters.ts';
import { backends, openTestStore, stopTestPostgres } from './testing.ts';
import type { KubeObject, UpstreamEvent } from './types.ts';

t.teardown(stopTestPostgres);

const numbers: unknown[] = [0, 1, 3, 7, -2, 1.5, 2.25, '5', 'ready', true, false, null, undefined, { a: 1 }, [1]];
const phases: unknown[] = ['Pending', 'Running', 'Done', 3, true, null, undefined];
const clusters = ['a', 'b', 'c'];

function widget(rnd: () => number, i: number): { cluster: string; ev: UpstreamEvent } {
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  const status: Record<string, unknown> = {};
  const ready = pick(numbers);
  if (ready !== undefined) status.readyReplicas = ready;
  const phase = pick(phases);
  if (phase !== undefined) status.phase = phase;
  const object: KubeObject = {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: `w-${i}`, namespace: pick(['n1', 'n2']), uid: `u-${i}`, resourceVersion: String(10 + i), labels: { color: pick(['red', 'blue']), ...(rnd() < 0.5 ? { tier: 'web' } : {}) } },
    spec: { size: pick(numbers) },
    status,
  };
  return { cluster: pick(clusters), ev: { type: 'ADDED', group: 'example.com', version: 'v1', resource: 'widgets', object } };
}

function at(obj: KubeObject, path: string[]): unknown {
  let cur: unknown = obj;
  for (const k of path) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

const scalarText = (v: unknown): string | undefined => (typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? JSON.stringify(v) : undefined);

function holds(m: JsonRequirement, obj: KubeObject): boolean {
  const v = at(obj, m.path);
  switch (m.operator) {
    case 'In':
      return scalarText(v) !== undefined && m.values.includes(scalarText(v)!);
    case 'NotIn':
      return scalarText(v) === undefined || !m.values.includes(scalarText(v)!);
    case 'Exists':
      return v !== undefined && v !== null;
    case 'DoesNotExist':
      return v === undefined || v === null;
    case 'Gt':
      return typeof v === 'number' && v > Number(m.values[0]);
    case 'Lt':
      return typeof v === 'number' && v < Number(m.values[0]);
  }
}

function expected(objs: Array<{ cluster: string; obj: KubeObject }>, q: AggregateQuery): Array<{ cluster: string; value: number | null; objects: number }> {
  const sel = objs.filter(({ cluster, obj }) => {
    const key = { cluster, group: 'example.com', resource: 'widgets', namespace: obj.metadata!.namespace!, name: obj.metadata!.name! };
    return objectMatches(q.select, key, obj) && (q.match ?? []).every((m) => holds(m, obj));
  });
  const groups = new Map<string, KubeObject[]>();
  if (!q.byCluster) groups.set('', []);
  for (const { cluster, obj } of sel) {
    const k = q.byCluster ? cluster : '';
    groups.set(k, [...(groups.get(k) ?? []), obj]);
  }
  return [...groups].sort((x, y) => (x[0] < y[0] ? -1 : 1)).map(([cluster, list]) => {
    const nums = list.map((o) => at(o, q.path ?? [])).filter((v): v is number => typeof v === 'number');
    let value: number | null;
    if (q.fn === 'count') value = list.length;
    else if (q.fn === 'sum') value = nums.reduce((a, b) => a + b, 0);
    else if (nums.length === 0) value = null;
    else if (q.fn === 'min') value = Math.min(...nums);
    else if (q.fn === 'max') value = Math.max(...nums);
    else value = nums.reduce((a, b) => a + b, 0) / nums.length;
    return { cluster, value, objects: list.length };
  });
}

for (const backend of backends) {
  t.test(`aggregates in SQL equal the in-memory computation (${backend})`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const rnd = prng(42);
    const objs: Array<{ cluster: string; obj: KubeObject }> = [];
    const byCluster = new Map<string, UpstreamEvent[]>();
    for (let i = 0; i < 300; i++) {
      const { cluster, ev } = widget(rnd, i);
      objs.push({ cluster, obj: ev.object });
      byCluster.set(cluster, [...(byCluster.get(cluster) ?? []), ev]);
    }
    for (const [c, evs] of byCluster) await store.applyBatch(c, evs);
    const watermark = await store.watermark();

    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
    const fns: AggregateFunction[] = ['count', 'sum', 'min', 'max', 'avg'];
    const requirement = (): JsonRequirement => {
      const op = pick(['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'] as const);
      const path = pick([['status', 'phase'], ['status', 'readyReplicas'], ['spec', 'size'], ['status', 'nope', 'deeper']]);
      const values = op === 'Gt' || op === 'Lt' ? [pick(['0', '1', '2.5', '-1'])] : op === 'In' || op === 'NotIn' ? [pick(['Pending', 'Running', '3', 'true', '1.5', '5']), pick(['Done', '7', 'false'])] : [];
      return { path, operator: op, values };
    };
    for (let i = 0; i < 120; i++) {
      const q: AggregateQuery = { select: { group: 'example.com', resource: 'widgets' }, fn: pick(fns), byCluster: rnd() < 0.5 };
      if (q.fn !== 'count') q.path = pick([['status', 'readyReplicas'], ['spec', 'size'], ['status', 'phase'], ['missing']]);
      if (rnd() < 0.3) q.select.clusters = [pick(clusters), pick(clusters)];
      if (rnd() < 0.3) q.select.namespaces = [pick(['n1', 'n2'])];
      if (rnd() < 0.4) q.select.labelSelector = parseLabelSelector(pick(['color=red', 'color!=red', 'tier', '!tier', 'color in (red,blue),tier']));
      if (rnd() < 0.5) q.match = Array.from({ length: 1 + Math.floor(rnd() * 2) }, requirement);
      const got = await store.aggregate(q);
      const want = expected(objs, q);
      t.equal(got.resourceVersion, watermark, 'read at the watermark');
      t.equal(got.rows.length, want.length, `rows of ${JSON.stringify(q)}`);
      for (const [j, w] of want.entries()) {
        const g = got.rows[j];
        if (!g) continue;
        t.equal(g.cluster, w.cluster);
        t.equal(g.objects, w.objects, `objects of ${JSON.stringify(q)}`);
        if (w.value === null || g.value === null) t.equal(g.value, w.value, `value of ${JSON.stringify(q)}`);
        else t.ok(Math.abs(g.value - w.value) < 1e-9, `value of ${JSON.stringify(q)}: ${g.value} vs ${w.value}`);
      }
    }

    // Nothing selected: count and sum are 0, the others null; per cluster: no rows.
    const none = { group: 'example.com', resource: 'widgets', clusters: ['zzz'] };
    t.same((await store.aggregate({ select: none, fn: 'count' })).rows, [{ cluster: '', value: 0, objects: 0 }]);
    t.same((await store.aggregate({ select: none, fn: 'sum', path: ['status', 'readyReplicas'] })).rows, [{ cluster: '', value: 0, objects: 0 }]);
    t.same((await store.aggregate({ select: none, fn: 'max', path: ['status', 'readyReplicas'] })).rows, [{ cluster: '', value: null, objects: 0 }]);
    t.same((await store.aggregate({ select: none, fn: 'count', byCluster: true })).rows, []);
    await t.rejects(store.aggregate({ select: none, fn: 'sum' }), /needs a JSON path/);
    await t.rejects(store.aggregate({ select: none, fn: 'sum', path: ['a"b'] }), /not supported/);
  });
}
