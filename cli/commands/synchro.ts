// `panoptes synchro`: list and watch every configured member cluster into storage.
import { startSynchro } from '../../synchro/synchro.ts';
import { IdentityConflictError } from '../../synchro/membership/membership.ts';
import { logger } from '../../lib/log.ts';
import { parseFlags, UsageError, type Command } from '../command.ts';
import { parseSynchroFlags, synchroFlagHelp, synchroFlagSpec } from './synchro-flags.ts';
import { memberHttp2FlagHelp } from './member-http2-flag.ts';
import { memberNetworksFlagHelp } from './member-networks-flag.ts';
import { commonFlags, openStorage, storageWaitFlagHelp } from './serve.ts';
import { summaries } from './summaries.ts';

const flags = {
  storage: { type: 'string' },
  'storage-wait': { type: 'string' },
  'log-level': { type: 'string' },
  'metrics-listen': { type: 'string' },
  ...synchroFlagSpec,
} as const;

const summary = summaries.synchro;

export const synchro: Command = {
  name: 'synchro',
  summary,
  usage: `Usage: panoptes synchro [--clusters clusters.yaml] [flags]
       panoptes synchro --kubeconfig FILE [--contexts a,b|all] [flags]

${summary}.
Runs until SIGINT or SIGTERM. Member clusters come from the clusters file (reloaded when it
changes; see synchro/README.md for its format) and from the Cluster objects registered through
the API (kubectl apply -f cluster.yaml), followed within a second.

Flags:
  --storage URL                 where state and the change log live (env PANOPTES_STORAGE)
                                sqlite:PATH (default sqlite:./data/panoptes.db) or postgres://user@host:5432/db
${storageWaitFlagHelp}
${synchroFlagHelp}
${memberNetworksFlagHelp}
${memberHttp2FlagHelp}
  --metrics-listen HOST:PORT    Prometheus metrics at /metrics (default 127.0.0.1:9091; "off" disables)
  --log-level LEVEL             debug, info (default), warn or error`,
  async run(argv) {
    const { values } = parseFlags(argv, flags);
    const { storage, storageWaitMs } = commonFlags(values);
    const source = parseSynchroFlags(values);
    const listen = values['metrics-listen'] ?? '127.0.0.1:9091';
    if (listen !== 'off' && listen !== '' && !/^.*:\d+$/.test(listen)) throw new UsageError(`--metrics-listen must be HOST:PORT or off, got ${JSON.stringify(listen)}`);

    const log = logger('synchro');
    const store = await openStorage(storage, 'synchro', storageWaitMs);
    let handle: Awaited<ReturnType<typeof startSynchro>>;
    try {
      handle = await startSynchro({
        store,
        ...source,
        metricsListen: listen === 'off' || listen === '' ? undefined : listen,
        log,
      });
    } catch (err) {
      await store.close();
      if (!(err instanceof IdentityConflictError)) throw err;
      log.error('not starting', { error: err.message });
      return 1;
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
