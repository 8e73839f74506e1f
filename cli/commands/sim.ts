// `panoptes sim`: simulated member clusters in the foreground (hack/sim), for tests and
// trying Panoptes without real clusters.
import { startSimClusters, type SimCluster } from '../../hack/sim/cluster.ts';
import { mcsReleases, type McsRelease } from '../../hack/sim/mcs-crds.ts';
import { intFlag, parseFlags, UsageError, waitForSignal, type Command } from '../command.ts';
import { summaries } from './summaries.ts';
import { writeKubeconfig } from './kubeconfig.ts';

export function clusterNames(value: string | undefined, fallback: string[]): string[] {
  const names = value === undefined ? fallback : value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const n of names) {
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(n)) throw new UsageError(`cluster names must be DNS labels, got ${JSON.stringify(n)}`);
  }
  if (names.length === 0 || new Set(names).size !== names.length) throw new UsageError('--clusters needs distinct names');
  return names;
}

export async function closeAll(clusters: SimCluster[]): Promise<void> {
  await Promise.all(clusters.map((c) => c.close()));
}

export const sim: Command = {
  name: 'sim',
  summary: summaries.sim,
  usage: `Usage: panoptes sim [flags]

Starts one in-memory Kubernetes API server per cluster on 127.0.0.1 (see hack/README.md:
kubectl works against each; fault injection under POST /_sim/...). Runs until Ctrl-C.

Flags:
  --clusters a,b,c     cluster names (default a,b,c)
  --base-port N        cluster i listens on N+i (default 7001; 0: ephemeral ports)
  --workload           load the demo workload (deployments, services, a CRD...)
  --churn RATE         per cluster, create/update/delete RATE objects per second (default 0)
  --seed N             churn seed (default 1)
  --history N          events kept for watch resumption; older rvs get 410 (default 10000)
  --mcs-crds LIST      clusters (or "all") with the MCS-API CRDs installed (ServiceExport,
                       ServiceImport, multicluster.x-k8s.io); default none
  --mcs-release R      the mcs-api release of those CRDs: ${mcsReleases.join(' or ')} (default ${mcsReleases[0]})
  --no-controllers     static clusters: no deployment, replicaset or endpointslice controllers
  --kubeconfig FILE    also write a kubeconfig with a sim-<name> context per cluster`,
  async run(argv) {
    const { values } = parseFlags(argv, {
      clusters: { type: 'string' },
      'base-port': { type: 'string' },
      workload: { type: 'boolean' },
      churn: { type: 'string' },
      seed: { type: 'string' },
      history: { type: 'string' },
      'mcs-crds': { type: 'string' },
      'mcs-release': { type: 'string' },
      'no-controllers': { type: 'boolean' },
      kubeconfig: { type: 'string' },
    });
    const names = clusterNames(values.clusters, ['a', 'b', 'c']);
    const basePort = intFlag('base-port', values['base-port'], 7001);
    const churn = intFlag('churn', values.churn, 0);
    const seed = intFlag('seed', values.seed, 1);
    const historySize = intFlag('history', values.history, 10_000);
    const mcsCRDs = values['mcs-crds'] === undefined ? false : values['mcs-crds'] === 'all' ? names : clusterNames(values['mcs-crds'], []);
    for (const n of Array.isArray(mcsCRDs) ? mcsCRDs : []) if (!names.includes(n)) throw new UsageError(`--mcs-crds names ${JSON.stringify(n)}, which is not among --clusters`);
    const release = values['mcs-release'] ?? mcsReleases[0];
    if (!(mcsReleases as readonly string[]).includes(release)) throw new UsageError(`--mcs-release must be one of ${mcsReleases.join(', ')}`);
    const clusters = await startSimClusters(names, {
      basePort, historySize, workload: values.workload ?? false, controllers: !values['no-controllers'], mcsCRDs, mcsRelease: release as McsRelease,
    });
    for (const [i, c] of clusters.entries()) {
      if (churn > 0) c.churn.start({ ratePerSecond: churn, seed: seed + i });
      console.log(`cluster ${c.name}: ${c.url}`);
    }
    if (values.kubeconfig) {
      await writeKubeconfig(values.kubeconfig, { sims: clusters.map((c) => ({ name: c.name, url: c.url })) });
      console.log(`kubeconfig: ${values.kubeconfig}`);
    }
    console.log('Ctrl-C to stop.');
    await waitForSignal();
    await closeAll(clusters);
    return 0;
  },
};
