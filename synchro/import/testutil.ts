// The setting of the importer's smaller tests: a running synchro (one member, s1) with a
// simulated host cluster, the apiserver serving the writes, on SQLite, its members allowed on
// loopback; everything stopped by the teardown the caller registers.
import { createApiserver } from '../../apiserver/server.ts';
import { startSimCluster, type SimCluster } from '../../hack/sim/cluster.ts';
import { MemberNetworks } from '../../member/networks.ts';
import { openTestStore } from '../../storage/testing.ts';
import type { Store } from '../../storage/store.ts';
import { startSynchro } from '../synchro.ts';
import { fastTimings, tempDir, writeClusters } from '../testutil.ts';

export interface ImportSetting {
  store: Store;
  /** The apiserver's URL. */
  base: string;
  /** Rewrites clusters.yaml (reloaded within 100 ms). */
  setClusters(clusters: Array<Record<string, unknown>>): void;
}

export async function importSetting(o: { host: SimCluster; sims: SimCluster[]; clusters?: Array<Record<string, unknown>>; importResyncMs?: number }, teardown: (stop: () => Promise<void>) => void): Promise<ImportSetting> {
  const { store, close } = await openTestStore('sqlite');
  const { dir, cleanup } = tempDir();
  const file = `${dir}/clusters.yaml`;
  writeClusters(file, o.clusters ?? []);
  const memberNetworks = MemberNetworks.parse('127.0.0.0/8');
  const api = await createApiserver({ store, memberNetworks });
  const base = await api.listen('127.0.0.1', 0);
  const synchro = await startSynchro({ store, memberNetworks, clustersFile: file, hostCluster: { server: o.host.url }, timings: fastTimings, reloadIntervalMs: 100, shards: { identity: 's1', assignIntervalMs: 200 }, compaction: false, ...(o.importResyncMs ? { importResyncMs: o.importResyncMs } : {}) });
  teardown(async () => {
    await synchro.stop();
    await api.close();
    await close();
    await Promise.all([...o.sims, o.host].map((s) => s.close()));
    cleanup();
  });
  return { store, base, setClusters: (clusters) => writeClusters(file, clusters) };
}

/** Simulated members by name, each accepting only its token `<name>-token-1`. */
export async function startMembers(names: string[]): Promise<Map<string, SimCluster>> {
  const sims = new Map<string, SimCluster>();
  for (const n of names) {
    const s = await startSimCluster({ name: n });
    s.auth.tokens = [`${n}-token-1`];
    sims.set(n, s);
  }
  return sims;
}
