// The apiserver's discovery catalog (apiserver/discovery/catalog.ts) refreshes every 2 s from
// every registered cluster's status: what one refresh costs in CPU at 100 and at 1,000 clusters
// of 18 resources and 10 CRDs (about 8 KiB each: real ones are often far larger) each, and the
// ratio per cluster (1.0: linear in the fleet). Storage is a stub answering at once: what is
// measured is the catalog's own work (parsing what it reads, views, discovery documents).
//
//   node --import tsx hack/bench/catalog.ts [--refreshes 5]
import { parseArgs } from 'node:util';
import { Catalog } from '../../apiserver/discovery/catalog.ts';
import type { Store } from '../../storage/store.ts';
import type { StoredObject } from '../../storage/types.ts';
import { setLogLevel } from '../../lib/log.ts';

const { values: args } = parseArgs({ options: { refreshes: { type: 'string', default: '5' } } });
setLogLevel('warn');
const refreshes = Number(args.refreshes);
const core = ['pods', 'services', 'configmaps', 'secrets', 'namespaces', 'nodes', 'events', 'endpoints', 'serviceaccounts', 'persistentvolumeclaims'].map((r) => ({ group: '', version: 'v1', resource: r }));
const resources = [
  ...core,
  ...['deployments', 'replicasets', 'statefulsets', 'daemonsets'].map((r) => ({ group: 'apps', version: 'v1', resource: r })),
  ...['jobs', 'cronjobs'].map((r) => ({ group: 'batch', version: 'v1', resource: r })),
  { group: 'discovery.k8s.io', version: 'v1', resource: 'endpointslices' },
  { group: 'networking.k8s.io', version: 'v1', resource: 'ingresses' },
];

/** A stored CRD of cluster `cluster`: a schema of about 8 KiB. */
function crdRow(cluster: string, i: number): StoredObject {
  const properties = Object.fromEntries(Array.from({ length: 60 }, (_, p) => [`field${p}`, { type: 'string', description: `what field ${p} of the widget says, at some length` }]));
  const name = `widgets${i}.example.com`;
  const object = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name, uid: `${cluster}-${i}` }, spec: { group: 'example.com', scope: 'Namespaced', names: { plural: `widgets${i}`, kind: `Widget${i}` }, versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties } } } } }] } };
  return { cluster, group: 'apiextensions.k8s.io', version: 'v1', resource: 'customresourcedefinitions', namespace: '', name, uid: `${cluster}-${i}`, rv: 1, upstreamRv: '1', object: JSON.stringify(object) };
}

async function cpuPerRefresh(clusters: number): Promise<number> {
  const records = Array.from({ length: clusters }, (_, i) => ({ name: `c${i}`, spec: {}, status: { apiResources: resources.map((r) => ({ ...r, kind: 'Kind', namespaced: true })), resources }, createdAt: '', updatedAt: '' }));
  const crds = records.flatMap((r) => Array.from({ length: 10 }, (_, i) => crdRow(r.name, i)));
  const stub: Pick<Store, 'listClusters' | 'storedResources' | 'list'> = {
    listClusters: async () => records,
    storedResources: async () => records.flatMap((r) => resources.map((x) => ({ cluster: r.name, ...x, count: 10 }))),
    list: async (q) => ({ items: q.resource === 'customresourcedefinitions' ? crds : [], resourceVersion: 1 }),
  };
  const catalog = new Catalog(stub as Store, { refreshMs: 3_600_000 });
  for (let i = 0; i < 3; i++) await catalog.refresh(); // warm
  const before = process.cpuUsage();
  for (let i = 0; i < refreshes; i++) await catalog.refresh();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / refreshes;
}

const small = await cpuPerRefresh(100);
const large = await cpuPerRefresh(1000);
console.log(`catalog refresh (every 2 s in each apiserver), ${resources.length} resources and 10 CRDs per cluster, CPU per refresh:`);
console.log(`  100 clusters: ${small.toFixed(1)} ms; 1,000 clusters: ${large.toFixed(1)} ms (${((large / 2000) * 100).toFixed(1)}% of a core at one refresh per 2 s)`);
console.log(`  per cluster, 1,000 against 100: ${(large / 1000 / (small / 100)).toFixed(2)}x (1.0: linear in the fleet)`);
