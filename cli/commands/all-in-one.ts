// `panoptes all-in-one`: synchro and the apiserver in one process sharing ONE Store (SQLite
// via better-sqlite3 is synchronous: two Stores on one file in one process could deadlock on
// the file lock) and one metrics registry, served at /metrics of the apiserver.
import { Registry } from 'prom-client';
import { ApiserverMetrics } from '../../apiserver/metrics.ts';
import { logger } from '../../lib/log.ts';
import { SynchroMetrics } from '../../synchro/metrics.ts';
import { startSynchro } from '../../synchro/synchro.ts';
import { durationFlag, parseFlags, UsageError, type Command } from '../command.ts';
import { parseInsecureListen, serveFlagHelp, serveFlagSpec, startServing } from './apiserver.ts';
import { commonFlags, openStorage } from './serve.ts';
import { waitForSignal } from './sim.ts';

const summary = 'synchro and apiserver in one process (SQLite by default): for a laptop, CI and the demo';

export const allInOne: Command = {
  name: 'all-in-one',
  summary,
  usage: `Usage: panoptes all-in-one --clusters clusters.yaml [flags]
       panoptes all-in-one --kubeconfig FILE [--contexts a,b|all] [flags]

${summary}. Runs until SIGINT or SIGTERM.
Metrics of both halves are at /metrics of the apiserver listener.

Flags:
  --storage URL                 default sqlite:./data/panoptes.db (env PANOPTES_STORAGE), or postgres://...
  --clusters FILE               clusters.yaml (see synchro/README.md) (env PANOPTES_CLUSTERS)
  --kubeconfig FILE             instead of --clusters: one member cluster per context
  --contexts a,b|all            with --kubeconfig (default all)
  --resources LIST              with --kubeconfig: resource patterns (default: synchro's default set)
${serveFlagHelp}
  --probe-interval DURATION     member readiness probe period (default 10s)
  --discovery-interval DURATION member rediscovery period (default 30s)
  --log-level LEVEL             debug, info (default), warn or error`,
  async run(argv) {
    const { values } = parseFlags(argv, {
      storage: { type: 'string' },
      'log-level': { type: 'string' },
      clusters: { type: 'string' },
      kubeconfig: { type: 'string' },
      contexts: { type: 'string' },
      resources: { type: 'string' },
      'probe-interval': { type: 'string' },
      'discovery-interval': { type: 'string' },
      ...serveFlagSpec,
    });
    const { storage } = commonFlags(values);
    const clustersFile = values.clusters ?? (values.kubeconfig ? undefined : process.env.PANOPTES_CLUSTERS);
    if (clustersFile && values.kubeconfig) throw new UsageError('give --clusters or --kubeconfig, not both');
    if (!clustersFile && !values.kubeconfig) throw new UsageError('give --clusters FILE (or --kubeconfig FILE)');
    if (!values.kubeconfig && (values.contexts || values.resources)) throw new UsageError('--contexts and --resources go with --kubeconfig');
    const contexts = values.contexts === undefined || values.contexts === 'all' ? 'all' : values.contexts.split(',').map((s) => s.trim()).filter(Boolean);
    if (contexts !== 'all' && contexts.length === 0) throw new UsageError('--contexts is empty');
    const resources = values.resources?.split(',').map((s) => s.trim()).filter(Boolean);
    const probeIntervalMs = durationFlag('probe-interval', values['probe-interval'], 10_000);
    const discoveryIntervalMs = durationFlag('discovery-interval', values['discovery-interval'], 30_000);
    parseInsecureListen(values['insecure-listen']);

    const log = logger('all-in-one');
    const store = await openStorage(storage, 'all-in-one');
    const registry = new Registry();
    let synchro: Awaited<ReturnType<typeof startSynchro>> | undefined;
    let server: Awaited<ReturnType<typeof startServing>> | undefined;
    try {
      server = await startServing(store, values, logger('apiserver'), new ApiserverMetrics(registry));
      synchro = await startSynchro({
        store,
        clustersFile,
        kubeconfig: values.kubeconfig,
        contexts,
        resources,
        metrics: new SynchroMetrics(registry),
        timings: { probeIntervalMs, discoveryIntervalMs },
        log: logger('synchro'),
      });
      log.info('all-in-one running', { url: server.url });
    } catch (err) {
      await synchro?.stop();
      await server?.close();
      await store.close();
      throw err;
    }
    const sig = await waitForSignal();
    log.info('stopping', { signal: sig });
    await synchro.stop();
    await server.close();
    await store.close();
    return 0;
  },
};
