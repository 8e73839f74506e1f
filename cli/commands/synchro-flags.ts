// The member-cluster flags that `panoptes synchro` and `panoptes all-in-one` share, parsed
// into the options of startSynchro.
import { defaultCompaction } from '../../synchro/compactor.ts';
import type { SynchroOptions } from '../../synchro/synchro.ts';
import { durationFlag, intFlag, UsageError } from '../command.ts';

export const synchroFlagSpec = {
  clusters: { type: 'string' },
  kubeconfig: { type: 'string' },
  contexts: { type: 'string' },
  resources: { type: 'string' },
  'probe-interval': { type: 'string' },
  'discovery-interval': { type: 'string' },
  'retention-age': { type: 'string' },
  'retention-count': { type: 'string' },
} as const;

export const synchroFlagHelp = `  --clusters FILE               clusters.yaml: the member clusters and what to sync (env PANOPTES_CLUSTERS);
                                reloaded when it changes (format: synchro/README.md)
  --kubeconfig FILE             instead of --clusters: one member cluster per kubeconfig context
  --contexts a,b|all            with --kubeconfig: which contexts (default all)
  --resources LIST              with --kubeconfig: resource patterns, comma-separated (default: the default set)
  --probe-interval DURATION     readiness probe period per member cluster (default 10s)
  --discovery-interval DURATION rediscovery period, to pick up CRDs (default 30s)
  --retention-age DURATION      keep every change younger than this in the change log (default 15m)
  --retention-count N           and at least the N newest (default 100000); older ones are compacted,
                                and watches or continue tokens from before them get 410 Expired`;

type SynchroFlagValues = { [K in keyof typeof synchroFlagSpec]?: string };

/** Where the member clusters come from, timings and retention; bad combinations are UsageErrors. */
export function parseSynchroFlags(values: SynchroFlagValues): Pick<SynchroOptions, 'clustersFile' | 'kubeconfig' | 'contexts' | 'resources' | 'timings' | 'compaction'> {
  const clustersFile = values.clusters ?? (values.kubeconfig ? undefined : process.env.PANOPTES_CLUSTERS);
  if (clustersFile && values.kubeconfig) throw new UsageError('give --clusters or --kubeconfig, not both');
  if (!clustersFile && !values.kubeconfig) throw new UsageError('give --clusters FILE (or --kubeconfig FILE)');
  if (!values.kubeconfig && (values.contexts || values.resources)) throw new UsageError('--contexts and --resources go with --kubeconfig');
  const contexts = values.contexts === undefined || values.contexts === 'all' ? 'all' : values.contexts.split(',').map((s) => s.trim()).filter(Boolean);
  if (contexts !== 'all' && contexts.length === 0) throw new UsageError('--contexts is empty');
  return {
    clustersFile,
    kubeconfig: values.kubeconfig,
    contexts,
    resources: values.resources?.split(',').map((s) => s.trim()).filter(Boolean),
    timings: {
      probeIntervalMs: durationFlag('probe-interval', values['probe-interval'], 10_000),
      discoveryIntervalMs: durationFlag('discovery-interval', values['discovery-interval'], 30_000),
    },
    compaction: {
      minAgeMs: durationFlag('retention-age', values['retention-age'], defaultCompaction.minAgeMs),
      minCount: intFlag('retention-count', values['retention-count'], defaultCompaction.minCount),
    },
  };
}
