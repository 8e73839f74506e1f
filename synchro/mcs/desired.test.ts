// The desired state of an exported Service, as table tests over storage-shaped inputs:
// providers and consumers, what each consumer gets, conflicts, the ports filter, the
// ServiceImport, ServiceExports, deletion, and the not-Ready policies against a clock.
import t from 'tap';
import { annotations, dispatchedSliceName, dispatchManagedBy, installationLabel, labels, managedByLabel, managedByValue, providerReadyAnnotation, type MultiClusterServiceSpec } from '../../api/multicluster-service.ts';
import { defaultResources } from '../../api/resource-patterns.ts';
import type { KubeObject } from '../../storage/types.ts';
import { planKey, type ClusterObject, type ClusterView, type ConsumerPlan, type KeyInputs, type KeyPlan, type McsView } from './desired.ts';

const key = { namespace: 'shop', name: 'web' };
const NOW = Date.parse('2026-03-01T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();

const both = { provider: true, consumer: true };
const ready = (name: string, extra: Partial<ClusterView> = {}): ClusterView => ({ name, ready: true, phase: 'Ready', serviceImports: false, roles: both, ...extra });
const down = (name: string, sinceSecondsAgo: number): ClusterView => ({ name, ready: false, phase: 'Unreachable (ProbeFailed)', serviceImports: false, roles: both, notReadySince: ago(sinceSecondsAgo) });
/** This installation's id, and the labels of what it dispatches. */
const ID = 'aaaabbbbcccc';
const own = { [managedByLabel]: managedByValue, [installationLabel]: ID };

const service = (cluster: string, opts: { managed?: boolean; ports?: Array<Record<string, unknown>>; headless?: boolean } = {}): ClusterObject => ({
  cluster,
  object: {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'shop', ...(opts.managed ? { labels: { [managedByLabel]: managedByValue } } : {}) },
    spec: { selector: opts.managed ? undefined : { app: 'web' }, ports: opts.ports ?? [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }], ...(opts.headless ? { clusterIP: 'None' } : { clusterIP: '10.96.0.10' }) },
  },
});

const slice = (cluster: string, name: string, ips: string[], opts: { dispatched?: boolean; ports?: Array<Record<string, unknown>>; ready?: boolean[] } = {}): ClusterObject => ({
  cluster,
  object: {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name,
      namespace: 'shop',
      labels: { [labels.serviceName]: 'web', [labels.endpointSliceManagedBy]: opts.dispatched ? dispatchManagedBy : 'endpointslice-controller.k8s.io', ...(opts.dispatched ? { [managedByLabel]: managedByValue } : {}) },
      annotations: { 'panoptes.io/cluster': cluster },
    },
    addressType: 'IPv4',
    endpoints: ips.map((ip, i) => ({ addresses: [ip], conditions: { ready: opts.ready?.[i] ?? true }, nodeName: `${cluster}-n${i}` })),
    ports: opts.ports ?? [{ name: 'http', port: 8080, protocol: 'TCP' }],
  },
});

const mcs = (spec: MultiClusterServiceSpec = {}, extra: Partial<McsView> = {}): McsView => ({ uid: 'u1', generation: 3, spec, deleting: false, ...extra });

const inputs = (over: Partial<KeyInputs>): KeyInputs => ({
  key,
  now: NOW,
  clusters: [ready('east'), ready('west'), ready('lab')],
  mcs: mcs(),
  exporters: [],
  services: [service('east')],
  slices: [slice('east', 'web-abc', ['10.0.0.1', '10.0.0.2'])],
  installation: ID,
  ...over,
});

/** The provider slices a consumer gets, as `<provider>/<slice>` (sorted); each under the name dispatchedSliceName gives the pair. */
function sources(cp: ConsumerPlan): string[] {
  return [...cp.slices].map(([name, s]) => {
    const [cluster, , slice] = (s.metadata?.annotations?.[annotations.source] ?? '').split('/');
    if (name !== dispatchedSliceName(cluster, slice)) throw new Error(`${name} is not the name of ${cluster}/${slice}`);
    return `${cluster}/${slice}`;
  }).sort();
}

/** A plan, summarised: per consumer, its Service plan and the slices it gets (sorted), `+si` when it gets a ServiceImport. */
function summary(p: KeyPlan): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [c, cp] of p.consumers) out[c] = `${cp.service.kind}${cp.service.kind === 'none' ? `:${cp.service.reason}` : ''} [${sources(cp).join(',')}]${cp.serviceImport ? ' +si' : ''}`;
  return out;
}

t.test('who provides, who consumes, and what each consumer gets', async (t) => {
  const cases: Array<{ name: string; in: Partial<KeyInputs>; want: Record<string, string>; providers?: string[] }> = [
    {
      name: 'one provider, every other cluster consumes; the provider keeps its own Service and gets nothing of its own',
      in: {},
      want: { east: 'provider []', lab: 'ensure [east/web-abc]', west: 'ensure [east/web-abc]' },
      providers: ['east'],
    },
    {
      name: 'two providers: each keeps its own Service as it is (nothing added to it), the consumer gets both',
      in: { services: [service('east'), service('lab')], slices: [slice('east', 'web-abc', ['10.0.0.1']), slice('lab', 'web-xyz', ['10.1.0.1']), slice('lab', 'web-xyz2', ['10.1.0.2'])] },
      want: { east: 'provider []', lab: 'provider []', west: 'ensure [east/web-abc,lab/web-xyz,lab/web-xyz2]' },
      providers: ['east', 'lab'],
    },
    {
      name: 'slices Panoptes dispatched are never collected back, wherever they are',
      in: { services: [service('east'), service('west', { managed: true })], slices: [slice('east', 'web-abc', ['10.0.0.1']), slice('west', 'east-web-abc', ['10.0.0.1'], { dispatched: true }), slice('east', 'lab-web-old', ['10.3.0.1'], { dispatched: true })] },
      want: { east: 'provider []', lab: 'ensure [east/web-abc]', west: 'ensure [east/web-abc]' },
      providers: ['east'],
    },
    {
      name: 'providerClusters: a cluster with the Service that is not named is a consumer in conflict',
      in: { mcs: mcs({ providerClusters: ['east'] }), services: [service('east'), service('lab')] },
      want: { east: 'provider []', lab: 'conflict []', west: 'ensure [east/web-abc]' },
      providers: ['east'],
    },
    {
      name: 'consumerClusters: only those (a name of no known cluster is ignored)',
      in: { mcs: mcs({ consumerClusters: ['west', 'gone'] }) },
      want: { west: 'ensure [east/web-abc]' },
    },
    {
      name: 'a pre-existing Service Panoptes did not create: a conflict, nothing dispatched there',
      in: { mcs: mcs({ providerClusters: ['east'] }), services: [service('east'), service('west')] },
      want: { east: 'provider []', lab: 'ensure [east/web-abc]', west: 'conflict []' },
    },
    {
      name: 'a Service Panoptes created earlier is not a provider\'s',
      in: { services: [service('east'), service('west', { managed: true })] },
      want: { east: 'provider []', lab: 'ensure [east/web-abc]', west: 'ensure [east/web-abc]' },
      providers: ['east'],
    },
    {
      name: 'no provider has the Service: nothing to dispatch anywhere',
      in: { services: [], slices: [] },
      want: { east: 'none:NoProviderService []', lab: 'none:NoProviderService []', west: 'none:NoProviderService []' },
      providers: [],
    },
    {
      name: 'the ServiceImport where the consumer has the CRD, never in a conflict nor beside a provider\'s own Service',
      in: { clusters: [ready('east', { serviceImports: true }), ready('west', { serviceImports: true }), ready('lab', { serviceImports: true }), ready('dev', { serviceImports: true })], services: [service('east'), service('dev')], mcs: mcs({ providerClusters: ['east'] }) },
      want: { dev: 'conflict []', east: 'provider []', lab: 'ensure [east/web-abc] +si', west: 'ensure [east/web-abc] +si' },
    },
    {
      name: 'no MultiClusterService, a ServiceExport in east: east exports to every other cluster',
      in: { mcs: undefined, exporters: ['east'] },
      want: { east: 'provider []', lab: 'ensure [east/web-abc]', west: 'ensure [east/web-abc]' },
      providers: ['east'],
    },
    {
      name: 'ServiceExports in east and lab: both provide',
      in: { mcs: undefined, exporters: ['east', 'lab'], services: [service('east'), service('lab')], slices: [slice('east', 'web-abc', ['10.0.0.1']), slice('lab', 'web-xyz', ['10.1.0.1'])] },
      want: { east: 'provider []', lab: 'provider []', west: 'ensure [east/web-abc,lab/web-xyz]' },
      providers: ['east', 'lab'],
    },
    {
      name: 'a ServiceExport in a cluster without the Service provides nothing; a Service without a ServiceExport is a conflict',
      in: { mcs: undefined, exporters: ['west', 'east'], services: [service('east'), service('lab')] },
      want: { east: 'provider []', lab: 'conflict []', west: 'ensure [east/web-abc]' },
      providers: ['east'],
    },
    {
      name: 'nothing exports it: no plan at all (everything dispatched for it goes)',
      in: { mcs: undefined, exporters: [] },
      want: {},
      providers: [],
    },
    {
      name: 'deleting: nobody gets anything, the consumers are still known (their cleanup is awaited)',
      in: { mcs: mcs({}, { deleting: true }) },
      want: {},
    },
  ];
  for (const c of cases) {
    const p = planKey(inputs(c.in));
    t.same(summary(p), c.want, c.name);
    if (c.providers) t.same(p.providers.map((x) => x.cluster), c.providers, `${c.name}: providers`);
  }
  const deleting = planKey(inputs({ mcs: mcs({ consumerClusters: ['west', 'lab'] }, { deleting: true }) }));
  t.same(deleting.consumerSet, ['lab', 'west'], 'a deleting plan keeps its consumer set');
  t.equal(deleting.deleting, true);
  t.equal(deleting.generation, 3);
  t.same(deleting.away, [], 'every consumer Ready: each is waited for');
});

t.test('deleting: a consumer not Ready is waited for during the grace, then not; a cluster no longer registered not at all', async (t) => {
  const iso = (ms: number) => new Date(ms).toISOString();
  const lab = (awayMs: number) => ready('lab', { ready: false, phase: 'Unreachable', notReadySince: iso(NOW - awayMs) });
  const entries = { consumers: ['west', 'lab', 'gone'].map((cluster) => ({ cluster, serviceApplied: true, endpointSlices: 1, endpoints: 1, conditions: [] })) };
  const deleting = (clusters: ClusterView[]) => planKey(inputs({ clusters, awayGraceMs: 60_000, mcs: mcs({}, { deleting: true, status: entries }) }));
  const during = deleting([ready('east'), ready('west'), lab(10_000)]);
  t.same(during.away, ['gone'], 'lab, away for 10 s of a 60 s grace, is waited for; gone (an entry, no registration) is not');
  t.equal(during.recheckAt, NOW + 50_000, 'planned again when the grace ends');
  t.same(deleting([ready('east'), ready('west'), lab(60_000)]).away, ['gone', 'lab'], 'past the grace, lab is not waited for');
  t.same(deleting([ready('east'), ready('west'), ready('lab', { ready: false, phase: 'Pending' })]).away, ['gone', 'lab'], 'not Ready since an unknown time: not waited for');
  t.same(planKey(inputs({ clusters: [ready('east'), ready('west'), lab(600_000)], mcs: mcs({}, { deleting: true }) })).away, ['lab'], 'the default grace is 300 s');
});

t.test('a dispatched slice: the contract\'s name, labels and annotations, the provider\'s endpoints, ports and address type as they are', async (t) => {
  const p = planKey(inputs({}));
  const s = p.consumers.get('west')!.slices.get(dispatchedSliceName('east', 'web-abc'))!;
  const src = slice('east', 'web-abc', ['10.0.0.1', '10.0.0.2']).object;
  t.equal(s.metadata?.name, dispatchedSliceName('east', 'web-abc'));
  t.same(s.metadata?.labels, {
    'kubernetes.io/service-name': 'web',
    'multicluster.kubernetes.io/service-name': 'web',
    'multicluster.kubernetes.io/source-cluster': 'east',
    'endpointslice.kubernetes.io/managed-by': dispatchManagedBy,
    ...own,
  });
  t.equal(s.metadata?.annotations?.[annotations.source], 'east/shop/web-abc');
  t.equal(s.metadata?.annotations?.[providerReadyAnnotation], 'true');
  t.equal(s.metadata?.annotations?.[annotations.providerLastSync], '2026-03-01T12:00:00Z', 'a Ready provider: written now');
  t.same([s.addressType, s.endpoints, s.ports], [src.addressType, src.endpoints, src.ports]);
  t.notOk(JSON.stringify(s).includes('endpointslice-controller.k8s.io'), "never kube's controller's managed-by");
  t.notOk(JSON.stringify(s).includes('panoptes.io/cluster'), "nothing of storage's annotations");
  const svc = p.consumers.get('west')!.service;
  t.same(svc.kind === 'ensure' && svc.object, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'shop', labels: own },
    spec: { type: 'ClusterIP', ports: [{ name: 'http', protocol: 'TCP', port: 80 }] },
  }, 'the Service: ClusterIP, no selector, the providers\' ports, labelled with the installation\'s id');
  t.same(p.providers, [{ cluster: 'east', endpoints: 2, ready: true, dispatched: true }]);

  const long = 'x'.repeat(250);
  const named = planKey(inputs({ slices: [slice('east', long, ['10.0.0.1'])] })).consumers.get('west')!.slices;
  const [n] = [...named.keys()];
  t.ok(n.length <= 253 && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(n), 'a long name stays a DNS subdomain of at most 253 characters');
});

t.test('ports: the union of the providers\' ports, filtered by spec.ports; slices keep the matching ports, and go when none is left', async (t) => {
  const twoPorts = [
    { name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 },
    { name: 'metrics', port: 9090, protocol: 'TCP', targetPort: 9090 },
  ];
  const base = {
    services: [service('east', { ports: twoPorts }), service('lab', { ports: [{ name: 'grpc', port: 81, protocol: 'TCP', appProtocol: 'grpc' }, { name: 'http', port: 8000, protocol: 'TCP' }] })],
    slices: [
      slice('east', 'web-both', ['10.0.0.1'], { ports: [{ name: 'http', port: 8080, protocol: 'TCP' }, { name: 'metrics', port: 9090, protocol: 'TCP' }] }),
      slice('east', 'web-metrics', ['10.0.0.2'], { ports: [{ name: 'metrics', port: 9090, protocol: 'TCP' }] }),
    ],
  };
  const all = planKey(inputs(base)).consumers.get('west')!;
  const svcPorts = (cp: typeof all) => (cp.service.kind === 'ensure' ? (cp.service.object.spec as { ports: unknown[] }).ports : undefined);
  t.same(svcPorts(all), [{ name: 'http', protocol: 'TCP', port: 80 }, { name: 'metrics', protocol: 'TCP', port: 9090 }, { name: 'grpc', protocol: 'TCP', port: 81, appProtocol: 'grpc' }], 'every port once (a name taken by the first provider is not repeated)');
  t.same(sources(all), ['east/web-both', 'east/web-metrics'], 'no filter: every slice as it is');
  const http = planKey(inputs({ ...base, mcs: mcs({ ports: [{ name: 'http' }] }) })).consumers.get('west')!;
  t.same(svcPorts(http), [{ name: 'http', protocol: 'TCP', port: 80 }]);
  t.same(sources(http), ['east/web-both'], 'a slice with no selected port is not dispatched');
  t.same(http.slices.get(dispatchedSliceName('east', 'web-both'))!.ports, [{ name: 'http', port: 8080, protocol: 'TCP' }], 'a slice keeps only the selected ports');
  const byPort = planKey(inputs({ ...base, mcs: mcs({ ports: [{ port: 9090 }] }) })).consumers.get('west')!;
  t.same(svcPorts(byPort), [{ name: 'metrics', protocol: 'TCP', port: 9090 }], 'by port number');
  const nothing = planKey(inputs({ ...base, mcs: mcs({ ports: [{ name: 'nope' }] }) })).consumers.get('west')!;
  t.same(nothing.service, { kind: 'none', reason: 'NoPorts', message: "no port of the providers' Service shop/web is selected by spec.ports" });

  const mixed = planKey(inputs({ services: [service('east', { ports: [{ port: 80, protocol: 'TCP' }] }), service('lab', { ports: [{ name: 'grpc', port: 81, protocol: 'TCP' }] })] })).consumers.get('west')!;
  t.same(svcPorts(mixed), [{ name: 'grpc', protocol: 'TCP', port: 81 }], 'several ports: only named ones, as kube requires');
  const single = planKey(inputs({ services: [service('east', { ports: [{ port: 80, protocol: 'TCP' }] })] })).consumers.get('west')!;
  t.same(svcPorts(single), [{ protocol: 'TCP', port: 80 }], 'one port may be unnamed');

  const headless = planKey(inputs({ services: [service('east', { headless: true, ports: [] })], clusters: [ready('east'), ready('west', { serviceImports: true })] })).consumers.get('west')!;
  t.match(headless.service, { kind: 'ensure', object: { spec: { type: 'ClusterIP', clusterIP: 'None', ports: [] } } }, 'headless providers: a headless Service');
  t.match(headless.serviceImport, { spec: { type: 'Headless' } });
});

t.test('the ServiceImport: ports and type as the Service, status.clusters the providers dispatched', async (t) => {
  const p = planKey(inputs({ clusters: [ready('east'), ready('west', { serviceImports: true }), ready('lab')], services: [service('east'), service('lab')], slices: [slice('east', 'web-abc', ['10.0.0.1'])] }));
  t.same(p.consumers.get('west')!.serviceImport, {
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    kind: 'ServiceImport',
    metadata: { name: 'web', namespace: 'shop', labels: own },
    spec: { type: 'ClusterSetIP', ports: [{ name: 'http', protocol: 'TCP', port: 80 }] },
    status: { clusters: [{ cluster: 'east' }, { cluster: 'lab' }] },
  });
  t.notOk(p.consumers.get('lab')!.serviceImport, 'not where the CRD is not served');
});

t.test('not-Ready providers: each policy, measured from when the provider stopped being Ready', async (t) => {
  const two = { services: [service('east'), service('lab')], slices: [slice('east', 'web-abc', ['10.0.0.1']), slice('lab', 'web-xyz', ['10.1.0.1'])] };
  const cases: Array<{ name: string; spec: MultiClusterServiceSpec; east: ClusterView; dispatching: string[]; recheckAt?: number; recorded?: string }> = [
    { name: 'Ready: dispatched', spec: {}, east: ready('east'), dispatching: ['east', 'lab'] },
    { name: 'KeepForGracePeriod (default 300 s), 10 s down: kept, planned again when the grace ends', spec: {}, east: down('east', 10), dispatching: ['east', 'lab'], recheckAt: NOW + 290_000 },
    { name: 'KeepForGracePeriod, 301 s down: removed', spec: {}, east: down('east', 301), dispatching: ['lab'] },
    { name: 'KeepForGracePeriod 60 s, 59 s down: kept', spec: { providerNotReady: { policy: 'KeepForGracePeriod', gracePeriodSeconds: 60 } }, east: down('east', 59), dispatching: ['east', 'lab'], recheckAt: NOW + 1000 },
    { name: 'KeepForGracePeriod 60 s, 61 s down: removed', spec: { providerNotReady: { gracePeriodSeconds: 60 } }, east: down('east', 61), dispatching: ['lab'] },
    {
      name: 'KeepForGracePeriod: the earlier time the status recorded counts (the cluster\'s transition moved on)',
      spec: { providerNotReady: { gracePeriodSeconds: 60 } },
      east: down('east', 10),
      recorded: ago(100),
      dispatching: ['lab'],
    },
    { name: 'RemoveImmediately, 1 s down: removed', spec: { providerNotReady: { policy: 'RemoveImmediately' } }, east: down('east', 1), dispatching: ['lab'] },
    { name: 'Keep, a day down: kept', spec: { providerNotReady: { policy: 'Keep' } }, east: down('east', 86_400), dispatching: ['east', 'lab'] },
    { name: 'a provider Pending while a new owner starts counts as Ready', spec: { providerNotReady: { policy: 'RemoveImmediately' } }, east: ready('east', { phase: 'Pending (Starting)' }), dispatching: ['east', 'lab'] },
  ];
  for (const c of cases) {
    const status = c.recorded ? { providers: [{ cluster: 'east', endpoints: 1, ready: false, notReadySince: c.recorded }] } : undefined;
    const p = planKey(inputs({ ...two, clusters: [c.east, ready('west'), ready('lab')], mcs: mcs(c.spec, { status }) }));
    t.same(p.dispatching, c.dispatching, c.name);
    t.same(sources(p.consumers.get('west')!), c.dispatching.map((x) => (x === 'east' ? 'east/web-abc' : 'lab/web-xyz')), `${c.name}: the consumer's slices`);
    t.equal(p.recheckAt, c.recheckAt, `${c.name}: recheck`);
    t.equal(p.providers.find((x) => x.cluster === 'east')?.ready, c.east.ready, `${c.name}: provider status`);
    t.equal(p.providers.find((x) => x.cluster === 'east')?.dispatched, c.dispatching.includes('east'), `${c.name}: the status says whether its endpoints are dispatched`);
  }
  const kept = planKey(inputs({ ...two, clusters: [down('east', 10), ready('west'), ready('lab')] }));
  const s = kept.consumers.get('west')!.slices.get(dispatchedSliceName('east', 'web-abc'))!;
  t.equal(s.metadata?.annotations?.[providerReadyAnnotation], 'false', 'a kept slice of a provider that is not Ready says so');
  t.equal(s.metadata?.annotations?.[annotations.providerLastSync], ago(10), '...and since when its data is not current');
  t.same(kept.providers.find((x) => x.cluster === 'east'), { cluster: 'east', endpoints: 1, ready: false, notReadySince: ago(10), dispatched: true });
  t.same(kept.consumers.get('west')!.serviceImport, undefined);
});

t.test("the endpoint conditions a consumer gets, per not-Ready policy: a provider in its grace period is going away (ready false, terminating), Keep keeps them as they were", async (t) => {
  // The provider's endpoints: ready; not ready (and not serving); terminating but serving (kube's own drain); no conditions at all.
  const src = slice('east', 'web-abc', ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4']);
  const eps = src.object.endpoints as Array<Record<string, unknown>>;
  eps[1].conditions = { ready: false, serving: false, terminating: false };
  eps[2].conditions = { ready: false, serving: true, terminating: true };
  delete eps[3].conditions;
  const asIs = [{ ready: true }, { ready: false, serving: false, terminating: false }, { ready: false, serving: true, terminating: true }, undefined];
  const going = [
    { ready: false, serving: true, terminating: true },
    { ready: false, serving: false, terminating: true },
    { ready: false, serving: true, terminating: true },
    { ready: false, serving: true, terminating: true },
  ];
  const cases: Array<{ name: string; spec: MultiClusterServiceSpec; east: ClusterView; want: Array<Record<string, unknown> | undefined> | 'removed' }> = [
    { name: 'a Ready provider, any policy', spec: {}, east: ready('east'), want: asIs },
    { name: 'KeepForGracePeriod (the default), within the grace', spec: {}, east: down('east', 10), want: going },
    { name: 'KeepForGracePeriod 60 s, 59 s down', spec: { providerNotReady: { policy: 'KeepForGracePeriod', gracePeriodSeconds: 60 } }, east: down('east', 59), want: going },
    { name: 'KeepForGracePeriod, the grace over', spec: {}, east: down('east', 301), want: 'removed' },
    { name: 'RemoveImmediately', spec: { providerNotReady: { policy: 'RemoveImmediately' } }, east: down('east', 1), want: 'removed' },
    { name: 'Keep, a day down', spec: { providerNotReady: { policy: 'Keep' } }, east: down('east', 86_400), want: asIs },
  ];
  for (const c of cases) {
    const p = planKey(inputs({ slices: [src], clusters: [c.east, ready('west'), ready('lab')], mcs: mcs(c.spec) }));
    const s = p.consumers.get('west')!.slices.get(dispatchedSliceName('east', 'web-abc'));
    if (c.want === 'removed') {
      t.notOk(s, `${c.name}: no slice`);
      continue;
    }
    const got = (s!.endpoints as Array<Record<string, unknown>>).map((e) => e.conditions);
    t.same(got, c.want, `${c.name}: the endpoints' conditions`);
    t.same((s!.endpoints as Array<Record<string, unknown>>).map((e) => e.addresses), eps.map((e) => e.addresses), `${c.name}: every endpoint, its addresses as they are`);
  }
  t.same(eps.map((e) => e.conditions), asIs, "the provider's own slice is not changed");
});

t.test('provider endpoints count the ready ones; every endpoint is dispatched', async (t) => {
  const p = planKey(inputs({ slices: [slice('east', 'a', ['10.0.0.1', '10.0.0.2', '10.0.0.3'], { ready: [true, false, true] })] }));
  t.equal(p.providers[0].endpoints, 2);
  const obj: KubeObject = p.consumers.get('west')!.slices.get(dispatchedSliceName('east', 'a'))!;
  t.equal((obj.endpoints as unknown[]).length, 3, 'every endpoint is dispatched, with its conditions');
});

t.test('the default resource set syncs what a plan is made of', async (t) => {
  for (const r of ['services', 'namespaces', 'discovery.k8s.io/endpointslices', 'multicluster.x-k8s.io/serviceexports', 'multicluster.x-k8s.io/serviceimports', 'apiextensions.k8s.io/customresourcedefinitions']) t.ok(defaultResources.includes(r), r);
});

t.test("a Service of a consumer's own never gets slices: not as a provider, not under a system name", async (t) => {
  // Every member has its own default/kubernetes (and kube-system/kube-dns): a
  // MultiClusterService of that name would have made each a provider and given each the
  // others' slices, bound to the Service that carries its API traffic.
  const everyone = (name: string, namespace: string) => {
    const k = { namespace, name };
    const svc = (cluster: string): ClusterObject => ({ cluster, object: { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace }, spec: { ports: [{ name: 'https', port: 443, protocol: 'TCP' }] } } });
    const sl = (cluster: string, ip: string): ClusterObject => ({ cluster, object: { ...slice(cluster, name, [ip]).object, metadata: { name, namespace, labels: { [labels.serviceName]: name } } } });
    return { key: k, services: ['east', 'west', 'lab'].map(svc), slices: [sl('east', '10.0.0.1'), sl('west', '10.1.0.1'), sl('lab', '10.2.0.1')] };
  };
  const api = planKey(inputs(everyone('kubernetes', 'default')));
  t.same(summary(api), { east: 'none:SystemService []', lab: 'none:SystemService []', west: 'none:SystemService []' }, 'default/kubernetes: dispatched nowhere');
  t.match(api.consumers.get('west')!.service, { kind: 'none', message: /default\/kubernetes is not dispatched: default\/kubernetes is the API server's Service: Panoptes dispatches no system Service unless the operator allows it with --mcs-allow-system-services/ });
  t.same(summary(planKey(inputs(everyone('kube-dns', 'kube-system')))), { east: 'none:SystemService []', lab: 'none:SystemService []', west: 'none:SystemService []' }, 'kube-system/kube-dns: nowhere');
  t.equal(planKey(inputs({ ...everyone('kube-dns', 'kube-system'), mcs: undefined, exporters: ['east'] })).source, undefined, 'a ServiceExport of a system Service exports nothing (what was dispatched for it goes)');
  const allowed = planKey(inputs({ ...everyone('kube-dns', 'kube-system'), allowedSystemServices: ['kube-system'] }));
  t.same(summary(allowed), { east: 'provider []', lab: 'provider []', west: 'provider []' }, 'allowed by the operator: still, nobody\'s own Service gets anything added');
  t.match(planKey(inputs({ ...everyone('kube-dns', 'kube-system'), allowedSystemServices: ['kube-system/kube-dns'], mcs: mcs({ providerClusters: ['east'] }), services: [everyone('kube-dns', 'kube-system').services[0]] })).consumers.get('west')!.service, { kind: 'ensure' }, 'allowed by namespace/name, a consumer without its own gets Panoptes\' Service');
});

t.test('roles: only granted providers provide, only granted consumers get anything, and the status says who the spec names in vain', async (t) => {
  const grants = (east: Partial<typeof both>, lab: Partial<typeof both>) => [ready('east', { roles: { ...both, ...east } }), ready('west'), ready('lab', { roles: { ...both, ...lab } })];
  const notProvider = planKey(inputs({ clusters: grants({ provider: false }, {}), mcs: mcs({ providerClusters: ['east'] }) }));
  t.same(summary(notProvider), { east: 'none:NoProviderService []', lab: 'none:NoProviderService []', west: 'none:NoProviderService []' }, 'east, not granted provider: no provider at all');
  t.same(notProvider.providers, []);
  t.same(notProvider.ungranted, ['east is not a provider (spec.multiClusterServices.provider of Cluster east is not true)']);
  const notConsumer = planKey(inputs({ clusters: grants({}, { consumer: false }), mcs: mcs({ consumerClusters: ['west', 'lab'] }) }));
  t.same(notConsumer.consumerSet, ['west'], 'lab, not granted consumer, is no consumer');
  t.same(summary(notConsumer), { west: 'ensure [east/web-abc]' });
  t.same(notConsumer.ungranted, ['lab is not a consumer (spec.multiClusterServices.consumer of Cluster lab is not true)']);
  t.same(planKey(inputs({ clusters: grants({}, { consumer: false }) })).ungranted, [], 'every cluster (no list): the ungranted ones are simply not in it');
  const exported = planKey(inputs({ clusters: grants({ provider: false }, {}), mcs: undefined, exporters: ['east'] }));
  t.equal(exported.source, undefined, "a ServiceExport in a cluster that is not a provider exports nothing");
});

t.test('addresses kube refuses, or inside a consumer\'s own ranges, are not dispatched; the plan says which', async (t) => {
  const bad = { slices: [slice('east', 'web-abc', ['10.0.0.1', '169.254.169.254', '127.0.0.1', '10.5.0.9'])] };
  const clusters = [ready('east'), ready('west', { ranges: { pods: ['10.5.0.0/16'], services: [] } }), ready('lab')];
  const p = planKey(inputs({ ...bad, clusters }));
  const addrs = (c: string) => (p.consumers.get(c)!.slices.get(dispatchedSliceName('east', 'web-abc'))!.endpoints as Array<{ addresses: string[] }>).map((e) => e.addresses[0]);
  t.same(addrs('lab'), ['10.0.0.1', '10.5.0.9'], 'lab: loopback and link-local left out');
  t.same(addrs('west'), ['10.0.0.1'], "west: also what is inside its own pod range");
  t.same(p.consumers.get('lab')!.refused, {
    endpoints: 2,
    examples: ['east/shop/web-abc: 169.254.169.254 may not be in the link-local range (169.254.0.0/16, fe80::/10)', 'east/shop/web-abc: 127.0.0.1 may not be in the loopback range (127.0.0.0/8, ::1/128)'],
  });
  t.equal(p.consumers.get('west')!.refused.endpoints, 3);
  t.match(p.consumers.get('west')!.refused.examples[2], 'east/shop/web-abc: 10.5.0.9 is in the pod range 10.5.0.0/16 of cluster west');
  t.same(p.providers[0].endpoints, 4, "the provider's own count is what it has");
});

t.test('deleting: a Ready consumer whose cleanup keeps failing is waited for during the grace, then not', async (t) => {
  const failing = (s: number) => ({ consumers: [{ cluster: 'lab', serviceApplied: true, endpointSlices: 1, endpoints: 1, conditions: [], failingSince: ago(s) }] });
  const plan = (s: number) => planKey(inputs({ awayGraceMs: 60_000, mcs: mcs({}, { deleting: true, status: failing(s) }) }));
  t.same(plan(10).away, [], 'failing for 10 s of a 60 s grace: waited for');
  t.equal(plan(10).recheckAt, NOW + 50_000, 'planned again when the grace ends');
  t.same(plan(61).away, ['lab'], 'past it: not waited for (cleaned when a write succeeds)');
});
