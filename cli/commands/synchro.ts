// `panoptes synchro`: list and watch every configured member cluster into storage.
import { startSynchro } from '../../synchro/synchro.ts';
import { logger } from '../../lib/log.ts';
import { defaultCompaction } from '../../synchro/compactor.ts';
import { durationFlag, intFlag, parseFlags, UsageError, type Command } from '../command.ts';
import { commonFlags, openStorage } from './serve.ts';

const flags = {
  storage: { type: 'string' },
  'log-level': { type: 'string' },
  clusters: { type: 'string' },
  kubeconfig: { type: 'string' },
  contexts: { type: 'string' },
  resources: { type: 'string' },
  'metrics-listen': { type: 'string' },
  'probe-interval': { type: 'string' },
  'discovery-interval': { type: 'string' },
  'retention-age': { type: 'string' },
  'retention-count': { type: 'string' },
} as const;

const summary = 'list and watch every member cluster; write current state and the change log to storage';

export const synchro: Command = {
  name: 'synchro',
  summary,
  usage: `Usage: panoptes synchro --clusters clusters.yaml [flags]
       panoptes synchro --kubeconfig FILE [--contexts a,b|all] [flags]

${summary}.
Runs until SIGINT or SIGTERM. The clusters file is reloaded when it changes; see synchro/README.md
for its format.

Flags:
  --storage URL                 where state and the change log live (env PANOPTES_STORAGE)
                                sqlite:PATH (default sqlite:./data/panoptes.db) or postgres://user@host:5432/db
  --clusters FILE               clusters.yaml: the member clusters and what to sync (env PANOPTES_CLUSTERS)
  --kubeconfig FILE             instead of --clusters: one cluster per kubeconfig context
  --contexts a,b|all            with --kubeconfig: which contexts (default all)
  --resources LIST              with --kubeconfig: resource patterns, comma-separated (default: the default set)
  --metrics-listen HOST:PORT    Prometheus metrics at /metrics (default 127.0.0.1:9091; "off" disables)
  --probe-interval DURATION     readiness probe period per cluster (default 10s)
  --discovery-interval DURATION rediscovery period, to pick up CRDs (default 30s)
  --retention-age DURATION      keep every change younger than this in the change log (default 15m)
  --retention-count N           and at least the N newest (default 100000); older ones are compacted,
                                and watches or continue tokens from before them get 410 Expired
  --log-level LEVEL             debug, info (default), warn or error`,
  async run(argv) {
    const { values } = parseFlags(argv, flags);
    const { storage } = commonFlags(values);
    const clustersFile = values.clusters ?? (values.kubeconfig ? undefined : process.env.PANOPTES_CLUSTERS);
    if (clustersFile && values.kubeconfig) throw new UsageError('give --clusters or --kubeconfig, not both');
    if (!clustersFile && !values.kubeconfig) throw new UsageError('give --clusters FILE (or --kubeconfig FILE)');
    if (!values.kubeconfig && (values.contexts || values.resources)) throw new UsageError('--contexts and --resources go with --kubeconfig');
    const contexts = values.contexts === undefined || values.contexts === 'all' ? 'all' : values.contexts.split(',').map((s) => s.trim()).filter(Boolean);
    if (contexts !== 'all' && contexts.length === 0) throw new UsageError('--contexts is empty');
    const resources = values.resources?.split(',').map((s) => s.trim()).filter(Boolean);
    const listen = values['metrics-listen'] ?? '127.0.0.1:9091';
    if (listen !== 'off' && listen !== '' && !/^.*:\d+$/.test(listen)) throw new UsageError(`--metrics-listen must be HOST:PORT or off, got ${JSON.stringify(listen)}`);
    const probeIntervalMs = durationFlag('probe-interval', values['probe-interval'], 10_000);
    const discoveryIntervalMs = durationFlag('discovery-interval', values['discovery-interval'], 30_000);
    const compaction = {
      minAgeMs: durationFlag('retention-age', values['retention-age'], defaultCompaction.minAgeMs),
      minCount: intFlag('retention-count', values['retention-count'], defaultCompaction.minCount),
    };

    const log = logger('synchro');
    const store = await openStorage(storage, 'synchro');
    let handle: Awaited<ReturnType<typeof startSynchro>>;
    try {
      handle = await startSynchro({
        store,
        clustersFile,
        kubeconfig: values.kubeconfig,
        contexts,
        resources,
        metricsListen: listen === 'off' || listen === '' ? undefined : listen,
        timings: { probeIntervalMs, discoveryIntervalMs },
        compaction,
        log,
      });
    } catch (err) {
      await store.close();
      throw err;
    }
    await new Promise<void>((resolve) => {
      const onSignal = (sig: string) => {
        log.info('stopping', { signal: sig });
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        resolve();
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    });
    await handle.stop();
    await store.close();
    return 0;
  },
};
