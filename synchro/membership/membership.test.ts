// Membership of the synchro fleet, in process on both backends: a member that cannot work
// (its clusters file does not parse at start) does not join and takes no share; a cluster
// that nobody syncs is marked not Ready; a member of another machine with the same host name
// and pid is alive while it heartbeats; two processes with one identity are not both members;
// the default identity is unique per process.
import { readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import t, { type Test } from 'tap';
import { startSimCluster, type SimCluster } from '../../hack/sim/cluster.ts';
import { clusterLease } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import { backends, openTestStore, stopTestPostgres } from '../../storage/testing.ts';
import { defaultShardSettings } from './membership.ts';
import { assignment } from './rendezvous.ts';
import { startSynchro, type SynchroHandle } from '../synchro.ts';
import { fastTimings, tempDir, waitUntil, writeClusters } from '../testutil.ts';

const TTL_MS = 2000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** No process has this pid: above Linux's largest pid_max (2^22). */
const DEAD_PID = 99_999_999;

interface ClusterRowStatus {
  ready?: boolean;
  phase?: string;
  reason?: string;
  message?: string;
  owner?: { member: string };
  conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
}

/** Cluster names (`prefix`-N) of which bounded-load rendezvous over `members` gives at least one to each member. */
function namesSpreadOver(prefix: string, members: string[], count: number): string[] {
  for (let start = 0; start < 200; start++) {
    const names = Array.from({ length: count }, (_, i) => `${prefix}-${start + i}`);
    const owners = assignment(names, members);
    if (members.every((m) => names.some((n) => owners.get(n) === m))) return names;
  }
  throw new Error('no spread found');
}

/** The names of `names` that bounded-load rendezvous over `members` gives to `member`. */
const shareOf = (names: string[], members: string[], member: string) => {
  const owners = assignment(names, members);
  return names.filter((n) => owners.get(n) === member);
};

async function startSims(t: Test, names: string[]): Promise<SimCluster[]> {
  const sims: SimCluster[] = [];
  for (const name of names) sims.push(await startSimCluster({ name }));
  t.teardown(() => Promise.all(sims.map((s) => s.close())));
  return sims;
}

const entries = (sims: SimCluster[]) => sims.map((s) => ({ name: s.name, server: s.url, resources: ['configmaps'] }));

async function holders(store: Store): Promise<Map<string, string | null>> {
  const { now } = await store.members();
  return new Map((await store.listLeases()).filter((l) => l.name.startsWith('cluster/')).map((l) => [l.name.slice('cluster/'.length), l.expiresAt > now ? l.holder : null]));
}

async function liveMembers(store: Store): Promise<string[]> {
  const { now, members } = await store.members();
  return members.filter((m) => m.expiresAt > now).map((m) => m.id);
}

const statusOf = async (store: Store, name: string) => ((await store.getCluster(name))?.status ?? {}) as ClusterRowStatus;

for (const backend of backends) {
  t.test(`${backend}: membership`, async (t) => {
    const { store, close } = await openTestStore(backend);
    const { dir, cleanup } = tempDir();
    const handles: SynchroHandle[] = [];
    t.teardown(async () => {
      for (const h of handles) await h.stop().catch(() => undefined);
      await close();
      cleanup();
    });
    const start = async (identity: string, clustersFile: string) => {
      const h = await startSynchro({ store, clustersFile, timings: fastTimings, reloadIntervalMs: 50, compaction: false, shards: { identity, leaseTtlMs: TTL_MS, assignIntervalMs: 200 } });
      handles.push(h);
      return h;
    };
    const stop = async (h: SynchroHandle) => {
      handles.splice(handles.indexOf(h), 1);
      await h.stop();
    };
    /** Simulated clusters that rendezvous over `members` spreads over each of them, in a clusters file of their own. */
    const setup = async (t: Test, prefix: string, members: string[], count = 3) => {
      const names = namesSpreadOver(prefix, members, count);
      const sims = await startSims(t, names);
      const file = `${dir}/${prefix}.yaml`;
      writeClusters(file, entries(sims));
      return { names, sims, file };
    };
    const waitOwned = (names: string[], holder: string) =>
      waitUntil(`${holder} owns ${names.join(', ')}`, async () => {
        const h = await holders(store);
        return names.every((n) => h.get(n) === holder);
      }, 20_000, 100);

    await t.test('a member whose clusters file does not parse at start does not join; it joins once the file is fixed', async (t) => {
      const names = namesSpreadOver('broken', ['a', 'b'], 3);
      const sims = await startSims(t, names);
      const good = `${dir}/good.yaml`;
      const broken = `${dir}/broken.yaml`;
      writeClusters(good, entries(sims));
      writeFileSync(broken, 'clusters: [ {name: x\n');
      const b = await start('b', broken);
      const a = await start('a', good);
      t.match(b.configError(), /broken\.yaml/, 'b reports its broken file');
      let seen = new Map<string, string | null>();
      const ownedByA = await waitUntil('every cluster owned by a and Ready', async () => {
        seen = await holders(store);
        if (!names.every((n) => seen.get(n) === 'a')) return false;
        for (const n of names) if ((await statusOf(store, n)).ready !== true) return false;
        return true;
      }, 20_000, 100).catch(() => false);
      t.ok(ownedByA, `a owns and syncs every cluster while b cannot work (leases: ${JSON.stringify([...seen])})`);
      t.notOk((await liveMembers(store)).includes('b'), 'b is not a member: no heartbeat');
      t.same(b.clusters(), {}, 'b runs no cluster');

      writeClusters(broken, entries(sims));
      const share = shareOf(names, ['a', 'b'], 'b');
      const joined = await waitUntil("b joins and syncs its share once its file parses", async () => {
        seen = await holders(store);
        if (!share.every((n) => seen.get(n) === 'b')) return false;
        for (const n of share) if ((await statusOf(store, n)).owner?.member !== 'b' || (await statusOf(store, n)).ready !== true) return false;
        return true;
      }, 20_000, 100).catch(() => false);
      t.ok(joined, `b syncs ${share.join(', ')} (leases: ${JSON.stringify([...seen])})`);

      writeFileSync(broken, 'clusters: [ {name: x\n');
      await waitUntil('b notices its file broke again', () => b.configError() !== undefined, 10_000);
      // Had b left, its leases would have run out within a TTL of the break: renewed by b more
      // than a TTL after it, they show b stayed (rather than a time thought to be long enough).
      const { now: brokeAt } = await store.members();
      await waitUntil("b's leases renewed a TTL after the break", async () => {
        const leases = await store.listLeases();
        return share.every((n) => {
          const l = leases.find((x) => x.name === clusterLease(n));
          return l?.holder === 'b' && l.expiresAt > brokeAt + 2 * TTL_MS;
        });
      }, 30_000, 100).catch(() => undefined);
      seen = await holders(store);
      t.ok(share.every((n) => seen.get(n) === 'b'), 'a later broken file keeps the last good configuration: b stays and keeps its share');
      t.ok((await liveMembers(store)).includes('b'), 'b still heartbeats');
      await stop(a);
      await stop(b);
    });

    await t.test('a cluster that nobody syncs is marked not Ready; taken back, it is Ready again', async (t) => {
      const { names, file } = await setup(t, 'nobody', ['a', 'z']);
      const a = await start('a', file);
      await waitUntil('every cluster Ready', async () => {
        for (const n of names) if ((await statusOf(store, n)).ready !== true) return false;
        return true;
      }, 20_000, 100);

      // A member that heartbeats and does nothing (a synchro of an older release with a broken file).
      const zombie = { id: 'z', host: 'elsewhere', pid: 4242, bootId: 'boot-of-elsewhere', pidNamespace: 'pid:[1]', instance: 'zombie-instance' };
      let beating = true;
      const beat = (async () => {
        while (beating) {
          await store.heartbeat(zombie, TTL_MS);
          await sleep(200);
        }
      })();
      t.teardown(async () => {
        beating = false;
        await beat;
      });
      const orphaned = shareOf(names, ['a', 'z'], 'z');
      const kept = names.filter((n) => !orphaned.includes(n));
      let last: ClusterRowStatus = {};
      const marked = await waitUntil('the clusters given to z marked NotSynced', async () => {
        for (const n of orphaned) {
          last = await statusOf(store, n);
          if (last.ready !== false || last.reason !== 'NotSynced') return false;
          // The status row and the Cluster object are two writes under the same lease: wait for the second too.
          const obj = (await store.getClusterObject(n))?.object.status as ClusterRowStatus | undefined;
          if (obj?.reason !== 'NotSynced') return false;
        }
        return true;
      }, 6 * TTL_MS + 10_000, 100).catch(() => false);
      t.ok(marked, `${orphaned.join(', ')}: not Ready (${JSON.stringify(last).slice(0, 300)})`);
      for (const n of orphaned) {
        const row = await statusOf(store, n);
        t.match(row.conditions?.find((c) => c.type === 'Ready'), { status: 'Unknown', reason: 'NotSynced', message: /\bz\b/ }, `${n}: the Ready condition says why, naming the member that should sync it`);
        const obj = (await store.getClusterObject(n))?.object.status as ClusterRowStatus | undefined;
        t.match(obj, { ready: false, reason: 'NotSynced', conditions: [{ type: 'Ready', status: 'Unknown', reason: 'NotSynced' }] }, `${n}: the Cluster object says so too`);
        t.equal((await holders(store)).get(n), null, `${n}: its lease is free again after the write`);
      }
      for (const n of kept) t.equal((await statusOf(store, n)).ready, true, `${n} (a's) stays Ready`);

      beating = false;
      await beat;
      await store.removeMember('z');
      const back = await waitUntil('a takes them back', async () => {
        for (const n of orphaned) {
          const s = await statusOf(store, n);
          if (s.ready !== true || s.owner?.member !== 'a') return false;
        }
        return true;
      }, 20_000, 100).catch(() => false);
      t.ok(back, 'Ready again once a member syncs them');
      await stop(a);
    });

    await t.test('a member of another machine with the same host name and pid is alive while it heartbeats', async (t) => {
      const { names, file } = await setup(t, 'twin', ['a', 'twin']);
      const twinShare = shareOf(names, ['a', 'twin'], 'twin');
      // The twin: this host's name, a pid that does not exist here, another boot id.
      const twin = { id: 'twin', host: hostname(), pid: DEAD_PID, bootId: 'boot-of-another-machine', pidNamespace: 'pid:[4026531836]', instance: 'twin-instance' };
      await store.heartbeat(twin, TTL_MS);
      const epochs = new Map<string, number>();
      for (const n of twinShare) epochs.set(n, (await store.acquireLease(clusterLease(n), 'twin', TTL_MS))!);
      let beating = true;
      const beat = (async () => {
        while (beating) {
          await store.heartbeat(twin, TTL_MS);
          await store.renewLeases('twin', twinShare.map((n) => ({ name: clusterLease(n), epoch: epochs.get(n)! })), TTL_MS);
          await sleep(200);
        }
      })();
      t.teardown(async () => {
        beating = false;
        await beat;
      });
      const a = await start('a', file);
      const mine = names.filter((n) => !twinShare.includes(n));
      await waitOwned(mine, 'a');
      await sleep(2 * TTL_MS);
      const h = await holders(store);
      const leases = await store.listLeases();
      t.same(twinShare.map((n) => [n, h.get(n), leases.find((l) => l.name === clusterLease(n))?.epoch]), twinShare.map((n) => [n, 'twin', epochs.get(n)]), "a never took the twin's leases");
      t.ok((await liveMembers(store)).includes('twin'), 'the twin counts as a member');
      beating = false;
      await beat;
      await stop(a);
      await store.removeMember('twin');
    });

    await t.test("a member of this machine whose process is gone frees its leases at once", async (t) => {
      const { names, file } = await setup(t, 'gone', ['a', 'gone']);
      const here = thisMachine();
      // A process of this machine (boot id and pid namespace) that no longer runs; its row and
      // leases would last an hour, far beyond the bounded wait below: a takeover within it is
      // the one of a process known gone, not of leases that ran out.
      const hour = 3_600_000;
      await store.heartbeat({ id: 'gone', host: hostname(), pid: DEAD_PID, bootId: here.bootId, pidNamespace: here.pidNamespace, instance: 'gone-instance' }, hour);
      for (const n of names) await store.acquireLease(clusterLease(n), 'gone', hour);
      const a = await start('a', file);
      await waitOwned(names, 'a');
      t.ok((await liveMembers(store)).includes('gone'), 'taken while the row of the gone process had not run out: because its process is gone');
      await stop(a);
      await store.removeMember('gone');
    });

    await t.test('two processes with the same identity: the second refuses to start; one that loses its identity leaves', async (t) => {
      const { names, file } = await setup(t, 'dup', ['dup', 'other'], 2);
      const first = await start('dup', file);
      await waitOwned(names, 'dup');
      const second = await startSynchro({ store, clustersFile: file, timings: fastTimings, compaction: false, shards: { identity: 'dup', leaseTtlMs: TTL_MS, assignIntervalMs: 200 } }).then(
        (h) => {
          handles.push(h);
          return undefined;
        },
        (err: Error) => err,
      );
      t.ok(second, 'the second process does not start');
      t.match(second?.message, new RegExp(`identity dup is held by another live instance.*host ${hostname()}.*pid ${process.pid}.*heartbeat \\d+(\\.\\d+)? s ago`), 'the error names the other instance: host, pid, heartbeat age');
      await sleep(TTL_MS);
      const h = await holders(store);
      t.ok(names.every((n) => h.get(n) === 'dup'), 'the first keeps its clusters');

      // Another instance takes the identity over (as after the first was paused past its TTL).
      await store.removeMember('dup');
      await store.heartbeat({ id: 'dup', host: 'elsewhere', pid: 7, bootId: 'boot-of-elsewhere', pidNamespace: 'pid:[1]', instance: 'intruder' }, 60_000);
      const left = await waitUntil('the first leaves', async () => {
        const h = await holders(store);
        return names.every((n) => h.get(n) === null) && Object.keys(first.clusters()).length === 0;
      }, 30_000, 100).catch(() => false);
      t.ok(left, 'it stops its clusters and hands their leases back');
      t.match(first.membership().reason, /identity dup is held by another live instance.*host elsewhere.*pid 7/, 'and says why');
      const row = (await store.members()).members.find((m) => m.id === 'dup');
      t.match(row, { host: 'elsewhere', pid: 7 }, "the other instance's row is left alone");
      await stop(first);
      await store.removeMember('dup');
    });
  });
}

t.test('the default identity is unique per process, with the host name', async (t) => {
  const a = defaultShardSettings().identity;
  const b = defaultShardSettings().identity;
  t.not(a, b, 'two processes of one host (or two containers with one host name and pid 1) get different identities');
  t.ok(a.startsWith(hostname()), a);
  t.match(a, /^[A-Za-z0-9][-A-Za-z0-9_.:@]{0,252}$/, 'a valid --identity');
});

t.teardown(stopTestPostgres);

/** This machine's boot id and pid namespace, as a member records them. */
function thisMachine(): { bootId: string; pidNamespace: string } {
  return { bootId: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(), pidNamespace: readlinkSync('/proc/self/ns/pid') };
}
