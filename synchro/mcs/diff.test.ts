// What a consumer holds against its plan: the writes, as table tests. Only this installation's
// objects are updated or deleted (and those Panoptes wrote before installations had ids get
// writes the writer then checks); a consumer's own objects and another installation's are
// conflicts; a Ready provider's last-sync time is no difference; storage's copy stands for the
// consumer once it is as recent as what this dispatcher wrote.
import t from 'tap';
import { annotations, dispatchedSliceName, installationLabel, managedByLabel, managedByValue, providerReadyAnnotation } from '../../api/multicluster-service.ts';
import type { KubeObject } from '../../storage/types.ts';
import { planKey, type ClusterObject, type ConsumerPlan } from './desired.ts';
import { diff, holdsNothing, overlay, type Held } from './diff.ts';

const ID = 'aaaabbbbcccc';
/** This installation's labels; another installation's; the mark alone (written before installations had ids). */
const mark = { [managedByLabel]: managedByValue, [installationLabel]: ID };
const other = { [managedByLabel]: managedByValue, [installationLabel]: 'ddddeeeeffff' };
const legacy = { [managedByLabel]: managedByValue };
const both = { provider: true, consumer: true };
/** The names of the slices dispatched for east's web-a, and one for a provider slice that went. */
const A = dispatchedSliceName('east', 'web-a');
const GONE = dispatchedSliceName('east', 'web-gone');
const where = { cluster: 'west', namespace: 'shop', name: 'web' };
const svc = (cluster: string, managed = false): ClusterObject => ({ cluster, object: { metadata: { name: 'web', namespace: 'shop', ...(managed ? { labels: mark } : {}) }, spec: { ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }], ...(managed ? {} : { selector: { app: 'web' } }) } } });
const src = (cluster: string, name: string, ips: string[]): ClusterObject => ({
  cluster,
  object: { metadata: { name, namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } }, addressType: 'IPv4', endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })), ports: [{ name: 'http', port: 8080, protocol: 'TCP' }] },
});

function planFor(consumer: string, opts: { ips?: string[]; eastReady?: boolean; imports?: boolean; foreign?: boolean } = {}): ConsumerPlan | undefined {
  const p = planKey({
    key: { namespace: 'shop', name: 'web' },
    now: Date.parse('2026-03-01T12:00:00Z'),
    clusters: [
      { name: 'east', ready: opts.eastReady ?? true, phase: 'Ready', serviceImports: false, roles: both, ...(opts.eastReady === false ? { notReadySince: '2026-03-01T11:59:00Z' } : {}) },
      { name: 'west', ready: true, phase: 'Ready', serviceImports: opts.imports ?? false, roles: both },
    ],
    mcs: { uid: 'u', generation: 1, spec: opts.foreign ? { providerClusters: ['east'] } : {}, deleting: false },
    exporters: [],
    services: [svc('east'), ...(opts.foreign ? [svc('west')] : [])],
    slices: [src('east', 'web-a', opts.ips ?? ['10.0.0.1'])],
    installation: ID,
  });
  return p.consumers.get(consumer);
}

/** What the consumer holds when it is exactly as `plan` says (as the member would serve it back: kube's defaults, its own annotations). */
function asPlanned(plan: ConsumerPlan): Held {
  const served = (o: KubeObject): KubeObject => ({ ...structuredClone(o), metadata: { ...o.metadata, uid: 'x', resourceVersion: '5', annotations: { ...o.metadata?.annotations, 'panoptes.io/cluster': 'west' } } });
  const service = plan.service.kind === 'ensure' ? served(plan.service.object) : undefined;
  if (service) (service.spec as Record<string, unknown>).clusterIP = '10.96.0.7';
  return { service, slices: new Map([...plan.slices].map(([n, s]) => [n, served(s)])), serviceImport: plan.serviceImport ? served(plan.serviceImport) : undefined };
}

const ops = (r: ReturnType<typeof diff>) => r.ops.map((o) => `${o.verb} ${o.kind} ${o.name}`);

t.test('the writes that bring a consumer to its plan', async (t) => {
  const plan = planFor('west')!;
  const inPlace = asPlanned(plan);
  const withSlice = (name: string, o: KubeObject) => ({ ...inPlace, slices: new Map([...inPlace.slices, [name, o]]) });
  const cases: Array<{ name: string; plan: ConsumerPlan | undefined; held: Held; ops: string[]; conflicts?: string[] }> = [
    { name: 'nothing held: the Service first, then its slices', plan, held: { slices: new Map() }, ops: ['create Service web', `create EndpointSlice ${A}`] },
    { name: 'as planned (kube defaults and storage annotations aside): nothing', plan, held: inPlace, ops: [] },
    { name: 'a Ready provider written earlier: its last-sync time is no difference', plan: planFor('west')!, held: asPlanned({ ...plan, slices: new Map([...plan.slices].map(([n, s]) => [n, { ...s, metadata: { ...s.metadata, annotations: { ...s.metadata?.annotations, [annotations.providerLastSync]: '2020-01-01T00:00:00Z' } } }])) }), ops: [] },
    { name: 'one endpoint more in the provider: one update', plan: planFor('west', { ips: ['10.0.0.1', '10.0.0.2'] }), held: inPlace, ops: [`update EndpointSlice ${A}`] },
    { name: 'the provider is not Ready (kept): the slice says so, once', plan: planFor('west', { eastReady: false }), held: inPlace, ops: [`update EndpointSlice ${A}`] },
    { name: 'a slice of a provider slice that went: deleted, after the writes', plan, held: withSlice(`${GONE}`, { metadata: { name: `${GONE}`, labels: mark } }), ops: [`delete EndpointSlice ${GONE}`] },
    { name: 'the Service Panoptes made lost its ports: updated', plan, held: { ...inPlace, service: { ...inPlace.service!, spec: { ports: [] } } }, ops: ['update Service web'] },
    { name: "someone's own Service where Panoptes' should be: a conflict, not written", plan, held: { ...inPlace, service: svc('west').object }, ops: [], conflicts: ['Service'] },
    { name: 'the ServiceImport where the CRD is: created', plan: planFor('west', { imports: true }), held: inPlace, ops: ['create ServiceImport web'] },
    {
      name: 'the ServiceImport: status.clusters moved: updated',
      plan: planFor('west', { imports: true }),
      held: { ...asPlanned(planFor('west', { imports: true })!), serviceImport: { ...asPlanned(planFor('west', { imports: true })!).serviceImport!, status: { clusters: [{ cluster: 'gone' }] } } },
      ops: ['update ServiceImport web'],
    },
    { name: "someone's own ServiceImport: a conflict", plan: planFor('west', { imports: true }), held: { ...inPlace, serviceImport: { metadata: { name: 'web' } } }, ops: [], conflicts: ['ServiceImport'] },
    {
      name: 'no plan (not a consumer, or nothing exports it): everything of Panoptes deleted, slices first, nothing else touched',
      plan: undefined,
      held: { ...inPlace, serviceImport: { metadata: { name: 'web', labels: mark } } },
      ops: [`delete EndpointSlice ${A}`, 'delete Service web', 'delete ServiceImport web'],
    },
    { name: "no plan: someone's own Service and ServiceImport stay", plan: undefined, held: { service: svc('west').object, serviceImport: { metadata: { name: 'web' } }, slices: new Map() }, ops: [] },
    { name: 'a conflict in the plan: only Panoptes\' leftovers go', plan: planFor('west', { foreign: true }), held: { service: svc('west').object, slices: inPlace.slices }, ops: [`delete EndpointSlice ${A}`] },
  ];
  for (const c of cases) {
    const r = diff(c.plan, c.held, where, ID);
    t.same(ops(r), c.ops, c.name);
    t.same(r.conflicts.map((x) => x.kind), c.conflicts ?? [], `${c.name}: conflicts`);
  }
});

t.test('a not-Ready provider\'s slice: its last-sync time is a difference', async (t) => {
  const plan = planFor('west', { eastReady: false })!;
  const held = asPlanned(plan);
  t.same(ops(diff(plan, held, where, ID)), []);
  const [name, s] = [...held.slices][0];
  held.slices.set(name, { ...s, metadata: { ...s.metadata, annotations: { ...s.metadata?.annotations, [annotations.providerLastSync]: '2026-03-01T11:00:00Z' } } });
  t.same(ops(diff(plan, held, where, ID)), [`update EndpointSlice ${A}`]);
  t.equal(s.metadata?.annotations?.[providerReadyAnnotation], 'false');
});

t.test("holdsNothing: only this installation's objects count", async (t) => {
  t.ok(holdsNothing({ slices: new Map() }, ID));
  t.ok(holdsNothing({ service: svc('west').object, serviceImport: { metadata: { name: 'web' } }, slices: new Map() }, ID));
  t.notOk(holdsNothing({ service: svc('west', true).object, slices: new Map() }, ID));
  t.notOk(holdsNothing({ slices: new Map([['a', { metadata: { labels: mark } }]]) }, ID));
  t.ok(holdsNothing({ service: { metadata: { name: 'web', labels: other } }, slices: new Map([['a', { metadata: { labels: other } }]]) }, ID), "another installation's objects are not this one's to clean");
});

t.test("another installation's objects are never written; those without an installation id are adopted or deleted", async (t) => {
  const plan = planFor('west')!;
  const inPlace = asPlanned(plan);
  const relabel = (o: KubeObject, l: Record<string, string>): KubeObject => ({ ...o, metadata: { ...o.metadata, labels: { ...o.metadata?.labels, [installationLabel]: '', ...l } } });
  const strip = (o: KubeObject): KubeObject => {
    const { [installationLabel]: _id, ...rest } = o.metadata?.labels ?? {};
    return { ...o, metadata: { ...o.metadata, labels: rest } };
  };
  const cases: Array<{ name: string; plan: ConsumerPlan | undefined; held: Held; ops: string[]; conflicts?: string[] }> = [
    {
      name: "another installation's Service and slice where this one's should be: conflicts, nothing written",
      plan,
      held: { service: relabel(inPlace.service!, other), slices: new Map([[A, relabel(inPlace.slices.get(A)!, other)]]) },
      ops: [],
      conflicts: ['Service', 'EndpointSlice'],
    },
    { name: "no plan: another installation's objects stay", plan: undefined, held: { service: relabel(inPlace.service!, other), slices: new Map([[A, relabel(inPlace.slices.get(A)!, other)]]) }, ops: [] },
    {
      name: 'written before installations had ids and wanted: updated with the id (adopted; the writer checks the live objects)',
      plan,
      held: { service: strip(inPlace.service!), slices: new Map([[A, strip(inPlace.slices.get(A)!)]]) },
      ops: ['update Service web', `update EndpointSlice ${A}`],
    },
    {
      name: 'a slice under its old name (<provider>-<slice>, before names had a hash): deleted, its new name created',
      plan,
      held: { service: inPlace.service, slices: new Map([['east-web-a', { metadata: { name: 'east-web-a', labels: { ...legacy, 'kubernetes.io/service-name': 'web' } } }]]) },
      ops: [`create EndpointSlice ${A}`, 'delete EndpointSlice east-web-a'],
    },
    { name: 'no plan: a Service without an id is not deleted (whose it is cannot be told)', plan: undefined, held: { service: strip(inPlace.service!), slices: new Map() }, ops: [] },
  ];
  for (const c of cases) {
    const r = diff(c.plan, c.held, where, ID);
    t.same(ops(r), c.ops, c.name);
    t.same(r.conflicts.map((x) => x.kind), c.conflicts ?? [], `${c.name}: conflicts`);
  }
});

t.test("overlay: storage's copy once it is as recent as the write, the write before", async (t) => {
  const o = (v: string): KubeObject => ({ metadata: { name: 'x', resourceVersion: v } });
  const cases: Array<{ name: string; synced?: [string]; written?: { rv: string; deleted?: boolean }; want: string; caughtUp: boolean }> = [
    { name: 'nothing written: storage', synced: ['7'], want: 'synced 7', caughtUp: true },
    { name: 'nothing anywhere', want: 'absent', caughtUp: true },
    { name: 'written at 9, storage at 7: the write', synced: ['7'], written: { rv: '9' }, want: 'written 9', caughtUp: false },
    { name: 'written at 9, storage has none yet: the write', written: { rv: '9' }, want: 'written 9', caughtUp: false },
    { name: 'written at 9, storage at 9: storage, caught up', synced: ['9'], written: { rv: '9' }, want: 'synced 9', caughtUp: true },
    { name: 'written at 9, storage at 12 (changed since): storage', synced: ['12'], written: { rv: '9' }, want: 'synced 12', caughtUp: true },
    { name: 'resourceVersions compare as integers', synced: ['10'], written: { rv: '9' }, want: 'synced 10', caughtUp: true },
    { name: 'deleted at 9, storage still has 9: gone', synced: ['9'], written: { rv: '9', deleted: true }, want: 'absent', caughtUp: false },
    { name: 'deleted at 9, storage has none: caught up', written: { rv: '9', deleted: true }, want: 'absent', caughtUp: true },
    { name: 'deleted at 9, storage has 14 (created again since): storage', synced: ['14'], written: { rv: '9', deleted: true }, want: 'synced 14', caughtUp: true },
  ];
  for (const c of cases) {
    const r = overlay(c.synced ? { object: { ...o(c.synced[0]), from: 'synced' }, upstreamRv: c.synced[0] } : undefined, c.written ? { rv: c.written.rv, ...(c.written.deleted ? {} : { object: { ...o(c.written.rv), from: 'written' } }) } : undefined);
    const got = r.object ? `${String(r.object.from)} ${r.object.metadata?.resourceVersion}` : 'absent';
    t.same([got, r.caughtUp], [c.want, c.caughtUp], c.name);
  }
});
