// `panoptes all-in-one`: synchro and the apiserver in one process sharing ONE Store (SQLite
// via better-sqlite3 is synchronous: two Stores on one file in one process could deadlock on
// the file lock) and one metrics registry, served at /metrics of the apiserver.
import { Registry } from 'prom-client';
import type { HealthCheck } from '../../apiserver/endpoints/health.ts';
import { ApiserverMetrics } from '../../apiserver/endpoints/metrics.ts';
import { logger } from '../../lib/log.ts';
import { SynchroMetrics } from '../../synchro/metrics/metrics.ts';
import { startSynchro } from '../../synchro/synchro.ts';
import { IdentityConflictError } from '../../synchro/membership/membership.ts';
import { parseFlags, waitForSignal, type Command } from '../command.ts';
import { parseInsecureListen, serveFlagHelp, serveFlagSpec, startServing } from './apiserver.ts';
import { commonFlags, openStorage, storageWaitFlagHelp } from './serve.ts';
import { parseSynchroFlags, synchroFlagHelp, synchroFlagSpec } from './synchro-flags.ts';
import { memberHttp2FlagHelp } from './member-http2-flag.ts';
import { memberNetworksFlagHelp } from './member-networks-flag.ts';
import { summaries } from './summaries.ts';

const summary = summaries['all-in-one'];

export const allInOne: Command = {
  name: 'all-in-one',
  summary,
  usage: `Usage: panoptes all-in-one [--clusters clusters.yaml] [flags]
       panoptes all-in-one --kubeconfig FILE [--contexts a,b|all] [flags]

${summary}. Runs until SIGINT or SIGTERM.
Metrics of both halves are at /metrics of the apiserver listener.

Flags:
  --storage URL                 default sqlite:./data/panoptes.db (env PANOPTES_STORAGE), or postgres://...
${storageWaitFlagHelp}
${synchroFlagHelp}
${serveFlagHelp}
${memberNetworksFlagHelp}
${memberHttp2FlagHelp}
  --log-level LEVEL             debug, info (default), warn or error`,
  async run(argv) {
    const { values } = parseFlags(argv, {
      storage: { type: 'string' },
      'storage-wait': { type: 'string' },
      'log-level': { type: 'string' },
      ...synchroFlagSpec,
      ...serveFlagSpec,
    });
    const { storage, storageWaitMs } = commonFlags(values);
    const source = parseSynchroFlags(values);
    parseInsecureListen(values['insecure-listen']);

    const log = logger('all-in-one');
    const store = await openStorage(storage, 'all-in-one', storageWaitMs);
    const registry = new Registry();
    let synchro: Awaited<ReturnType<typeof startSynchro>> | undefined;
    let server: Awaited<ReturnType<typeof startServing>> | undefined;
    try {
      // The proxy reads the member credentials synchro reads.
      const members = {
        ...(source.clustersFile ? { clustersFile: source.clustersFile } : {}),
        ...(source.kubeconfig ? { kubeconfig: source.kubeconfig, contexts: source.contexts } : {}),
        ...(source.hostCluster ? { hostCluster: source.hostCluster, credentialsNamespace: source.credentialsNamespace } : {}),
      };
      // /readyz of the one listener fails while the synchro half cannot work either (storage is checked already).
      const synchroReady = (name: 'config' | 'membership'): HealthCheck => ({
        name: `synchro-${name}`,
        check: async () => {
          if (!synchro) return 'not started yet';
          return (await synchro.readiness()).find((r) => r.name === name)?.failure;
        },
      });
      server = await startServing(store, values, logger('apiserver'), new ApiserverMetrics(registry), { members, readyChecks: [synchroReady('config'), synchroReady('membership')] });
      synchro = await startSynchro({
        store,
        ...source,
        metrics: new SynchroMetrics(registry),
        log: logger('synchro'),
      });
      log.info('all-in-one running', { url: server.url });
    } catch (err) {
      await synchro?.stop();
      await server?.close();
      await store.close();
      if (!(err instanceof IdentityConflictError)) throw err;
      log.error('not starting', { error: err.message });
      return 1;
    }
    const sig = await waitForSignal();
    log.info('stopping', { signal: sig });
    await synchro.stop();
    await server.close();
    await store.close();
    return 0;
  },
};
