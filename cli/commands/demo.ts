// `panoptes demo` (npm run demo): three simulated member clusters with a realistic workload
// and light churn, a kubeconfig with a context per cluster, and kubectl commands to try.
// It also starts the Panoptes all-in-one (synchro + apiserver in this process, one Store)
// over those clusters; its URL goes into the kubeconfig as the `panoptes` contexts. One
// Service of the first cluster (`shop/catalog`, a Deployment of its own) is exported to the
// others by a MultiClusterService created at start; the second cluster has the MCS-API CRDs,
// so it gets a ServiceImport too.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Registry } from 'prom-client';
import { stringify } from 'yaml';
import { ApiserverMetrics } from '../../apiserver/endpoints/metrics.ts';
import { logger } from '../../lib/log.ts';
import { MemberNetworks } from '../../member/networks.ts';
import { SynchroMetrics } from '../../synchro/metrics/metrics.ts';
import { startSynchro } from '../../synchro/synchro.ts';
import { startServing } from './apiserver.ts';
import { openStorage } from './serve.ts';
import { startSimClusters } from '../../hack/sim/cluster.ts';
import { addApp } from '../../hack/sim/workload.ts';
import { intFlag, parseFlags, UsageError, waitForSignal, type Command } from '../command.ts';
import { writeKubeconfig } from './kubeconfig.ts';
import { closeAll, clusterNames } from './sim.ts';
import { summaries } from './summaries.ts';

export const defaultDemoKubeconfig = './data/demo/kubeconfig';

/** What the demo's Clusters registered through the API may reach besides the default: this machine, where its simulated clusters run. */
export const demoMemberNetworks = '127.0.0.0/8';

/** Declared external metrics of the demo (the all-in-one's --external-metrics-file). */
export const demoMetrics = {
  metrics: [
    { name: 'frontend-ready', resource: 'deployments.apps', namespaces: ['shop'], fieldSelector: 'metadata.name=frontend', aggregate: 'sum', path: '.status.readyReplicas', perCluster: true },
    { name: 'red-widgets', resource: 'widgets.demo.panoptes.io', namespaces: 'all', match: [{ path: '.spec.color', operator: 'In', values: ['red'] }] },
  ],
};

/** The external metric queries the demo suggests (an HPA's requests, by hand). */
export const demoMetricPaths = [
  '/apis/external.metrics.k8s.io/v1beta1/namespaces/default/pods?labelSelector=search.panoptes.io/all-namespaces=true,field.panoptes.io/status.phase=Pending',
  '/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/frontend-ready?labelSelector=search.panoptes.io/clusters!=east',
];

/** The Service the demo exports: a Deployment of the first cluster alone, dispatched to the others. */
export const demoExport = { namespace: 'shop', name: 'catalog', replicas: 2 };

/** The MultiClusterService that exports it from `provider` to `consumers`. */
export function demoMultiClusterService(provider: string, consumers: string[]) {
  return {
    apiVersion: 'panoptes.io/v1alpha1',
    kind: 'MultiClusterService',
    metadata: { name: demoExport.name, namespace: demoExport.namespace },
    spec: { providerClusters: [provider], consumerClusters: consumers },
  };
}

/** The kubectl commands that show the exported Service: the MultiClusterService, the dispatched slices, and scaling the provider's Deployment. */
export function exportInstructions(k: string, clusters: { name: string }[], created: boolean, manifest: string): string[] {
  const [provider, ...consumers] = clusters.map((c) => c.name);
  if (!provider || consumers.length === 0) return [];
  const { namespace: ns, name } = demoExport;
  const slices = `get endpointslices -n ${ns} -l multicluster.kubernetes.io/service-name=${name}`;
  return [
    '',
    `Multi-cluster Services: ${ns}/${name} of ${provider} exported to ${consumers.join(' and ')} (${created ? 'a MultiClusterService created at start' : `create it: ${k} --context panoptes apply -f ${manifest}`}):`,
    `  ${k} --context panoptes get mcs -n ${ns} -o wide      # providers, consumers, endpoints, ready`,
    `  ${k} --context sim-${consumers[0]} get svc ${name} -n ${ns}      # a Service without a selector, made by Panoptes`,
    `  ${k} --context sim-${consumers[0]} ${slices}      # ${provider}'s endpoints: a slice per slice of ${provider}`,
    `  ${k} --context sim-${consumers[0]} get serviceimports -n ${ns}      # the MCS-API's ServiceImport (${consumers[0]} has the CRD)`,
    `  ${k} --context sim-${provider} scale deploy ${name} -n ${ns} --replicas=4      # scale in ${provider}...`,
    `  ${k} --context sim-${consumers[consumers.length - 1]} ${slices} -w      # ...the slices in ${consumers.join(' and ')} follow: 4 endpoints`,
  ];
}

export function demoInstructions(kubeconfig: string, clusters: { name: string; url: string }[], panoptes?: string, exported?: { created: boolean; manifest: string }): string {
  const k = `kubectl --kubeconfig ${kubeconfig}`;
  const first = clusters[0]?.name ?? 'a';
  const lines = [
    '',
    'Simulated member clusters:',
    ...clusters.map((c) => `  ${c.name.padEnd(8)} ${c.url}   (context sim-${c.name})`),
    '',
    `Kubeconfig: ${kubeconfig}`,
    '',
    'Try:',
    `  ${k} --context sim-${first} get nodes`,
    `  ${k} --context sim-${first} get deploy,rs,pods -n shop`,
    `  ${k} --context sim-${first} get pods -A -l app.kubernetes.io/managed-by=sim-churn -w`,
    `  ${k} --context sim-${first} get widgets -n shop`,
    `  ${k} --context sim-${first} scale deploy frontend -n shop --replicas=5`,
    `  ${k} --context sim-${first} label cm frontend-config -n shop tier=web`,
    `  curl -s -XPOST '${clusters[0]?.url ?? ''}/_sim/drop-watches'          # fault injection: see hack/README.md`,
  ];
  if (panoptes) {
    lines.push(
      '',
      `Panoptes: ${panoptes}   (contexts panoptes = every cluster, panoptes-<cluster> = one)`,
      `  ${k} --context panoptes get pods -A`,
      `  ${k} --context panoptes get pods -A -o wide -l app=frontend`,
      `  ${k} --context panoptes get deploy,svc -A`,
      `  ${k} --context panoptes get pods -A -l 'search.panoptes.io/clusters in (${first})'`,
      `  ${k} --context panoptes get clusters`,
      `  ${k} --context panoptes get widgets -A`,
      `  ${k} --context panoptes-${first} get deploy -A`,
      `  ${k} --context panoptes api-resources`,
      `  curl -s ${panoptes}/apis/panoptes.io/v1alpha1/clusters`,
      '',
      `Through Panoptes to one member, as the demo's user (the proxy: writes, subresources, logs, exec, top, auth can-i):`,
      `  ${k} --context panoptes-${first} logs deploy/frontend -n shop --tail 5 -f`,
      `  ${k} --context panoptes-${first} exec -it deploy/frontend -n shop -- sh        # echo, cat, env, ls, exit N`,
      `  ${k} --context panoptes-${first} top pods -n shop`,
      `  ${k} --context panoptes-${first} scale deploy frontend -n shop --replicas=4`,
      `  ${k} --context panoptes-${first} auth can-i delete pods -n shop`,
      '',
      'External metrics, as a HorizontalPodAutoscaler reads them (pending pods fleet-wide; frontend ready replicas per cluster but east):',
      ...demoMetricPaths.map((path) => `  ${k} --context panoptes get --raw '${path}'`),
      `  ${k} --context panoptes get --raw /apis/external.metrics.k8s.io/v1beta1      # every metric`,
      ...(exported ? exportInstructions(k, clusters, exported.created, exported.manifest) : []),
    );
  } else {
    lines.push('', 'No Panoptes server: the sim-* contexts reach the clusters directly.');
  }
  lines.push('', 'Ctrl-C to stop.');
  return lines.join('\n');
}

export const demo: Command = {
  name: 'demo',
  summary: summaries.demo,
  usage: `Usage: panoptes demo [flags]   (also: npm run demo)

Starts simulated member clusters (hack/sim) with deployments, replicasets, pods, services,
endpointslices, configmaps and a CRD with custom resources, plus light churn, writes a
kubeconfig with a context sim-<name> per cluster and prints commands to try. Runs until Ctrl-C.
The Service shop/catalog of the first cluster is exported to the others (a MultiClusterService;
the second cluster has the MCS-API CRDs).

Flags:
  --clusters a,b,c         cluster names (default east,west,lab)
  --base-port N            cluster i listens on N+i (default 7001; 0: ephemeral ports)
  --kubeconfig FILE        where to write the kubeconfig (default ${defaultDemoKubeconfig})
  --churn RATE             changes per second per cluster (default 2; 0: none)
  --seed N                 churn seed (default 1)
  --listen HOST:PORT       where the all-in-one serves (plain HTTP, loopback only; default 127.0.0.1:8080)
  --storage URL            the all-in-one's storage (default sqlite:./data/demo/panoptes.db, emptied at start)
  --panoptes-server URL    use a Panoptes you run yourself instead of starting the all-in-one

The all-in-one lets Clusters registered through its API reach ${demoMemberNetworks}, where the simulated
clusters listen (--allow-member-networks ${demoMemberNetworks}).`,
  async run(argv) {
    const { values } = parseFlags(argv, {
      clusters: { type: 'string' },
      'base-port': { type: 'string' },
      kubeconfig: { type: 'string' },
      churn: { type: 'string' },
      seed: { type: 'string' },
      'panoptes-server': { type: 'string' },
      listen: { type: 'string' },
      storage: { type: 'string' },
    });
    const names = clusterNames(values.clusters, ['east', 'west', 'lab']);
    const basePort = intFlag('base-port', values['base-port'], 7001);
    const rate = intFlag('churn', values.churn, 2);
    const seed = intFlag('seed', values.seed, 1);
    const file = resolve(values.kubeconfig ?? defaultDemoKubeconfig);

    // Step 1: the member clusters.
    let clusters;
    try {
      clusters = await startSimClusters(names, { basePort, workload: true, mcsCRDs: names.slice(1, 2) });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new UsageError(`a port from ${basePort} is in use: pick another --base-port (or 0)`);
      throw err;
    }
    // The Service to export: a Deployment of the first cluster alone (the others have no Service of that name).
    addApp(clusters[0].crud, demoExport.namespace, demoExport.name, demoExport.replicas);
    await clusters[0].controllers.settle();
    for (const [i, c] of clusters.entries()) {
      if (rate > 0) c.churn.start({ ratePerSecond: rate, seed: seed + i, namespaces: ['shop', 'batch'], maxObjects: 50 });
    }
    const sims = clusters.map((c) => ({ name: c.name, url: c.url }));
    const manifest = join(dirname(file), `${demoExport.name}-mcs.yaml`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(manifest, stringify(demoMultiClusterService(names[0], names.slice(1))));
    let exported = false;

    // Step 2: the Panoptes all-in-one over those clusters (unless one is given).
    let panoptes: string | undefined = values['panoptes-server'];
    let stopPanoptes = async () => {};
    if (!panoptes) {
      const dir = dirname(file);
      mkdirSync(dir, { recursive: true });
      const clustersFile = join(dir, 'clusters.yaml');
      writeFileSync(clustersFile, stringify({ clusters: sims.map((c) => ({ name: c.name, server: c.url, resources: ['*'] })) }));
      const metricsFile = join(dir, 'metrics.yaml');
      writeFileSync(metricsFile, stringify(demoMetrics));
      const storage = values.storage ?? `sqlite:${join(dir, 'panoptes.db')}`;
      if (storage.startsWith('sqlite:')) {
        const { rmSync } = await import('node:fs');
        for (const suffix of ['', '-wal', '-shm']) rmSync(storage.slice('sqlite:'.length) + suffix, { force: true });
      }
      const store = await openStorage(storage, 'demo');
      const registry = new Registry();
      // The simulated clusters listen on this machine: Clusters registered through the demo's API may reach them.
      // Nobody is authenticated: the proxy (kubectl logs, exec, scale, top) goes to the members as the demo's user.
      const server = await startServing(
        store,
        { 'insecure-listen': values.listen ?? '127.0.0.1:8080', 'external-metrics-file': metricsFile, 'allow-member-networks': demoMemberNetworks, 'insecure-proxy-user': 'demo' },
        logger('apiserver'),
        new ApiserverMetrics(registry),
        { members: { clustersFile } },
      );
      const synchro = await startSynchro({
        store,
        clustersFile,
        metrics: new SynchroMetrics(registry),
        timings: { probeIntervalMs: 2000 },
        memberNetworks: MemberNetworks.parse(demoMemberNetworks),
        log: logger('synchro'),
      });
      await synchro.waitForInitialSync(30_000);
      panoptes = server.url;
      if (names.length > 1) exported = await createMultiClusterService(server.url, demoMultiClusterService(names[0], names.slice(1)));
      stopPanoptes = async () => {
        await synchro.stop();
        await server.close();
        await store.close();
      };
    }

    // Step 3: kubeconfig and instructions.
    await writeKubeconfig(file, { sims, panoptes: panoptes ? { server: panoptes, clusters: names, insecureSkipTlsVerify: panoptes.startsWith('https:') } : undefined, currentContext: `sim-${names[0]}` });
    console.log(demoInstructions(file, sims, panoptes, names.length > 1 ? { created: exported, manifest } : undefined));
    await waitForSignal();
    await stopPanoptes();
    await closeAll(clusters);
    return 0;
  },
};

/** Creates the demo's MultiClusterService through the all-in-one's API, as kubectl would; false (logged) if it could not. */
async function createMultiClusterService(server: string, body: ReturnType<typeof demoMultiClusterService>): Promise<boolean> {
  const url = `${server}/apis/panoptes.io/v1alpha1/namespaces/${body.metadata.namespace}/multiclusterservices`;
  try {
    const r = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    if (r.status === 201 || r.status === 409) return true;
    logger('demo').warn('the MultiClusterService was not created', { status: r.status, body: (await r.text()).slice(0, 500) });
  } catch (err) {
    logger('demo').warn('the MultiClusterService was not created', { err: err as Error });
  }
  return false;
}
