// End-to-end: three `panoptes synchro` processes share six simulated member clusters on a
// PostgreSQL server of this test's own, and a watch client reads every configmap through
// `panoptes apiserver` while the members churn. Through a kill -9, a SIGSTOP past the lease
// TTL, a member added and one stopped gracefully, and a storage restart: the watch stream
// has no event twice and none out of order, every event it carries is one the member itself
// made (its upstream resourceVersion), per object in the member's order, epochs in the change
// log never go back for a cluster (no row from a writer that lost its lease), and at the end
// storage and the watch client's view equal every member's own list.
import t from 'tap';
import { createDatabase, freePort, startPostgres, type PostgresServer } from '../storage/testing/postgres.ts';
import { startSimCluster, type SimCluster } from '../hack/sim/cluster.ts';
import { get } from '../hack/sim/testutil.ts';
import { httpWatch, type HttpWatch, type HttpWatchEvent } from '../hack/testing/watch-http.ts';
import { clusterObjectsCluster } from '../storage/cluster-objects.ts';
import { Store } from '../storage/store.ts';
import type { Change } from '../storage/types.ts';
import { diffCopy, spawnPanoptes, tempDir, waitUntil, writeClusters, type PanoptesProcess } from './testutil.ts';

const P = '/apis/panoptes.io/v1alpha1/resources';
const TTL_MS = 3000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ids = ['/configmaps'];

/** A watch of every configmap that re-watches from its last rv whenever the stream ends (as a reflector does). */
class ResilientWatch {
  readonly events: HttpWatchEvent[] = [];
  private current?: HttpWatch;
  private stopped = false;
  readonly loop: Promise<void>;
  constructor(
    private readonly base: string,
    private rv: string,
  ) {
    this.loop = this.run();
  }

  get lastRv(): number {
    return Number(this.rv);
  }

  private async run(): Promise<void> {
    for (let attempt = 0; attempt < 10_000 && !this.stopped; attempt++) {
      try {
        const w = (this.current = await httpWatch(`${this.base}${P}/api/v1/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=${this.rv}&timeoutSeconds=60`));
        let seen = 0;
        const drain = () => {
          for (; seen < w.events.length; seen++) {
            const e = w.events[seen];
            if (e.type === 'ERROR') throw new Error(`watch ERROR: ${JSON.stringify(e.object)}`);
            this.rv = e.object.metadata.resourceVersion;
            if (e.type !== 'BOOKMARK') this.events.push(e);
          }
        };
        while (!this.stopped && !w.ended) {
          await Promise.race([w.done, sleep(50)]);
          drain();
        }
        drain();
      } catch (err) {
        if ((err as Error).message.startsWith('watch ERROR')) throw err;
        await sleep(200); // the apiserver or its storage is away: try again
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.close();
    await this.loop.catch(() => undefined);
  }
}

const objKey = (cluster: string, ns: string, name: string) => `${cluster}/${ns}/${name}`;

t.test('synchro processes share the clusters and fail over without a lost or repeated write', async (t) => {
  let pg: PostgresServer | undefined = await startPostgres();
  const url = await createDatabase(pg.url, 'panoptes_shards');
  const store = await Store.open(url);
  const { dir, cleanup } = tempDir();
  const sims: SimCluster[] = [];
  const procs: PanoptesProcess[] = [];
  let watch: ResilientWatch | undefined;
  t.teardown(async () => {
    await watch?.stop();
    for (const s of sims) s.churn.stop();
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    await Promise.all(sims.map((s) => s.close()));
    await store.close();
    await pg?.stop();
    cleanup();
  });

  // Six members, each with its own record of its configmap changes: key → upstream rvs in order.
  const history = new Map<string, string[]>();
  for (let i = 1; i <= 6; i++) {
    const sim = await startSimCluster({ name: `c${i}`, historySize: 100_000 });
    sims.push(sim);
    sim.store.subscribe('/configmaps', (e) => {
      const k = objKey(sim.name, e.object.metadata.namespace ?? '', e.object.metadata.name!);
      const h = history.get(k) ?? [];
      h.push(`${e.type === 'DELETED' ? 'D' : ''}${e.object.metadata.resourceVersion}`);
      history.set(k, h);
    });
    sim.churn.start({ ratePerSecond: 10, seed: i, resources: ['configmaps'], maxObjects: 60 });
  }
  const file = `${dir}/clusters.yaml`;
  writeClusters(file, sims.map((s) => ({ name: s.name, server: s.url, resources: ['configmaps'] })));

  const startMember = (name: string) => {
    const p = spawnPanoptes(name, ['synchro', '--storage', url, '--clusters', file, '--identity', name, '--lease-ttl', `${TTL_MS}ms`, '--probe-interval', '500ms', '--metrics-listen', 'off', '--log-level', 'info']);
    procs.push(p);
    return p;
  };
  const members = new Map<string, PanoptesProcess>();
  for (const m of ['s1', 's2', 's3']) members.set(m, startMember(m));

  const apiPort = await freePort();
  const api = spawnPanoptes('apiserver', ['apiserver', '--storage', url, '--insecure-listen', `127.0.0.1:${apiPort}`, '--log-level', 'warn']);
  procs.push(api);
  const base = `http://127.0.0.1:${apiPort}`;
  await waitUntil('the apiserver serving', async () => (await get(`${base}${P}/api/v1/configmaps?limit=1`)).status === 200, 60_000).catch((err: Error) => {
    throw new Error(`${err.message}; apiserver log: ${api.log.slice(-20).join('\n')}`);
  });

  const leases = async () => new Map((await store.listLeases()).filter((l) => l.name.startsWith('cluster/')).map((l) => [l.name.slice('cluster/'.length), l]));
  const owners = async () => {
    const now = Date.now();
    const out = new Map<string, string>();
    for (const [c, l] of await leases()) if (l.holder && l.expiresAt > now - 500) out.set(c, l.holder);
    return out;
  };
  const ownedBy = async (m: string) => [...(await owners())].filter(([, h]) => h === m).map(([c]) => c);
  await waitUntil('every cluster owned and synced', async () => {
    const o = await owners();
    if (o.size !== 6) return false;
    for (const s of sims) if (((await store.getCluster(s.name))?.status as { initialSync?: { complete?: boolean } })?.initialSync?.complete !== true) return false;
    return true;
  }, 60_000, 200);
  // The first member to join may own everything for a pass or two, until it sees the others.
  let spread = new Set<string>();
  await waitUntil('the clusters spread over the members', async () => (spread = new Set((await owners()).values())).size >= 2, 30_000, 200).catch(() => undefined);
  t.ok(spread.size >= 2, `the clusters are spread over the members: ${[...spread].join(', ')}`);

  // The client's view: a list, then the watch from the list's rv.
  const initial = await store.list({ group: '', resource: 'configmaps' });
  const seed = new Map(initial.items.map((o) => [objKey(o.cluster, o.namespace, o.name), o.upstreamRv]));
  watch = new ResilientWatch(base, String(initial.resourceVersion));

  /** Stops the churn, waits for storage to equal every member, then checks the watch stream and the change log. */
  const verify = async (label: string) => {
    for (const s of sims) s.churn.stop();
    for (const s of sims) {
      let diff: string[] = [];
      await waitUntil(`${label}: storage equals ${s.name}`, async () => (diff = await diffCopy(store, s, s.name, ids)).length === 0, 30_000, 200).catch(() => undefined);
      t.same(diff, [], `${label}: storage equals ${s.name}'s own list`);
    }
    // The newest configmap change (Cluster objects' status changes come after it, but a configmaps watch sees those only as its next bookmark).
    let wm = 0;
    for (let after = 1, page = 0; page < 1000; page++) {
      const changes = await store.changesAfter(after, 5000);
      if (changes.length === 0) break;
      for (const c of changes) if (c.resource === 'configmaps') wm = c.rv;
      after = changes[changes.length - 1].rv;
    }
    await waitUntil(`${label}: the watch reaches rv ${wm}`, () => watch!.lastRv >= wm, 30_000, 100);

    // The watch stream: strictly increasing rvs (nothing twice, nothing out of order).
    const rvs = watch!.events.map((e) => Number(e.object.metadata.resourceVersion));
    const out = rvs.findIndex((rv, i) => i > 0 && rv <= rvs[i - 1]);
    t.equal(out, -1, `${label}: ${rvs.length} watch events, each rv once and in order${out > 0 ? ` (rv ${rvs[out]} after ${rvs[out - 1]})` : ''}`);

    // Every event is one the member made, per object in the member's order; the view equals storage.
    const view = new Map(seed);
    const lastUpstream = new Map<string, number>();
    const problems: string[] = [];
    for (const e of watch!.events) {
      const md = e.object.metadata;
      const cluster = md.annotations['panoptes.io/cluster'];
      const k = objKey(cluster, md.namespace ?? '', md.name);
      const up = md.annotations['panoptes.io/upstream-resource-version'];
      const h = history.get(k) ?? [];
      if (e.type === 'DELETED') {
        if (!h.some((x) => x.startsWith('D'))) problems.push(`${k}: DELETED but never deleted by the member`);
        view.delete(k);
        continue;
      }
      if (!h.includes(up)) problems.push(`${k}: ${e.type} at upstream rv ${up}, which the member never made`);
      const prev = lastUpstream.get(k);
      if (prev !== undefined && e.type === 'MODIFIED' && Number(up) <= prev) problems.push(`${k}: upstream rv ${up} after ${prev}`);
      lastUpstream.set(k, Number(up));
      view.set(k, up);
    }
    t.same(problems.slice(0, 10), [], `${label}: every watch event is one of the member's own changes, in its order`);
    const stored = new Map<string, string>();
    for (const o of (await store.list({ group: '', resource: 'configmaps' })).items) stored.set(objKey(o.cluster, o.namespace, o.name), o.upstreamRv);
    t.same([...view].sort(), [...stored].sort(), `${label}: the watch client's view equals storage`);

    // The change log: per cluster, epochs never go back (no row from a writer that lost its lease).
    const lastEpoch = new Map<string, number>();
    const backwards: string[] = [];
    let after = 1;
    for (let page = 0; page < 1000; page++) {
      const changes: Change[] = await store.changesAfter(after, 5000);
      if (changes.length === 0) break;
      for (const c of changes) {
        // A Cluster object is written under the lease of the cluster it names.
        const lease = c.cluster === clusterObjectsCluster ? c.name : c.cluster;
        const prev = lastEpoch.get(lease) ?? 0;
        if ((c.epoch ?? 0) < prev) backwards.push(`rv ${c.rv} of ${lease} written at epoch ${c.epoch} after epoch ${prev}`);
        lastEpoch.set(lease, Math.max(prev, c.epoch ?? 0));
      }
      after = changes[changes.length - 1].rv;
    }
    t.same(backwards.slice(0, 10), [], `${label}: every change of a cluster was written under its newest epoch so far`);
    for (const [i, s] of sims.entries()) s.churn.start({ ratePerSecond: 10, seed: 100 + i + label.length, resources: ['configmaps'], maxObjects: 60 });
  };

  /** Resolves once the members made `n` more changes (the churn under way again after a verify). */
  const churned = async (n: number) => {
    const from = await store.watermark();
    await waitUntil(`${n} more changes`, async () => (await store.watermark()) >= from + n, 60_000, 100);
  };

  await t.test('kill -9 of a member under churn: its clusters are taken over', async (t) => {
    await churned(30);
    const [victim, mine] = (await Promise.all(['s1', 's2', 's3'].map(async (m) => [m, await ownedBy(m)] as const))).sort((a, b) => b[1].length - a[1].length)[0];
    const before = await leases();
    members.get(victim)!.child.kill('SIGKILL');
    members.delete(victim);
    for (const c of mine) {
      const epoch = before.get(c)!.epoch;
      // Bounded generously: what is proved is that another member writes it, under a newer epoch.
      const took = await waitUntil(`the first write of ${c}'s new owner`, async () => {
        const changes = await store.changesAfter(Math.max(1, (await store.watermark()) - 2000), 2000);
        return changes.some((x) => x.cluster === c && (x.epoch ?? 0) > epoch);
      }, 60_000, 100).then(() => true, () => false);
      t.ok(took, `${c} (of ${victim}) written by its new owner under a newer epoch than ${epoch}`);
      const now = (await leases()).get(c);
      t.ok(now && now.holder !== victim && now.epoch > epoch, `${c}'s lease has another holder (${now?.holder}, epoch ${now?.epoch})`);
    }
    await verify('after kill -9');
  });

  await t.test('SIGSTOP past the TTL, then SIGCONT: the paused member never writes again under its old leases', async (t) => {
    const [victim] = [...members.keys()];
    const mine = await ownedBy(victim);
    t.ok(mine.length > 0, `${victim} owns ${mine.join(', ')}`);
    const before = await leases();
    members.get(victim)!.child.kill('SIGSTOP');
    await waitUntil(`${victim}'s clusters taken over`, async () => {
      const now = await leases();
      return mine.every((c) => now.get(c)!.holder !== victim && now.get(c)!.epoch > before.get(c)!.epoch);
    }, 60_000, 100);
    // The new owners write before the paused member resumes.
    for (const c of mine) {
      const epoch = before.get(c)!.epoch;
      await waitUntil(`a write of ${c} by its new owner`, async () => {
        const changes = await store.changesAfter(Math.max(1, (await store.watermark()) - 2000), 2000);
        return changes.some((x) => x.cluster === c && (x.epoch ?? 0) > epoch);
      }, 60_000, 100);
    }
    members.get(victim)!.child.kill('SIGCONT');
    // It notices, stops, rejoins; rebalancing may hand clusters back.
    const noticed = await waitUntil('the resumed member notices', () => members.get(victim)!.log.some((l) => /lease lost|batch fenced/.test(l)), 60_000, 100).then(() => true, () => false);
    await verify('after SIGSTOP and SIGCONT');
    t.ok(noticed, 'the resumed member noticed it lost its leases');
  });

  await t.test('a member added takes its share; one stopped gracefully hands over at once', async (t) => {
    members.set('s4', startMember('s4'));
    await waitUntil('s4 takes its share', async () => (await ownedBy('s4')).length > 0, 30_000, 200);
    const graceful = [...members.keys()].find((m) => m !== 's4')!;
    const mine = await ownedBy(graceful);
    const held = await leases();
    members.get(graceful)!.child.kill('SIGTERM');
    t.equal(await members.get(graceful)!.exited, 0, 'SIGTERM stops it cleanly');
    members.delete(graceful);
    // Without waiting for the TTL: once it has exited, none of its leases is still its own (an
    // expiry would leave its name on them until another member takes them).
    const released = await leases();
    t.same(mine.filter((c) => released.get(c)?.holder === graceful), [], `its ${mine.length} leases released on exit`);
    for (const c of mine) t.ok((released.get(c)?.epoch ?? 0) >= held.get(c)!.epoch, `${c}: epoch not back`);
    await waitUntil(`${graceful}'s clusters owned again`, async () => {
      const o = await owners();
      return mine.every((c) => o.get(c) !== undefined && o.get(c) !== graceful);
    }, 60_000, 50);
    await verify('after a member joined and one left');
  });

  await t.test('the storage restarted under load: every member recovers', async (t) => {
    await churned(30);
    await pg!.restart(1500);
    await waitUntil('every cluster owned again', async () => (await owners().catch(() => new Map())).size === 6, 60_000, 200);
    await verify('after the storage restarted');
    for (const [name, p] of members) t.equal(p.child.exitCode, null, `${name} still runs`);
  });

  for (const s of sims) s.churn.stop();
  await watch.stop();
  watch = undefined;
  for (const [, p] of members) p.child.kill('SIGTERM');
  for (const [name, p] of members) t.equal(await p.exited, 0, `${name} stops cleanly`);
  t.same((await store.listLeases()).filter((l) => l.name.startsWith('cluster/') && l.holder !== null).map((l) => l.name), [], 'graceful stops release every lease');
});
