// The synchro fleet on a bad day, end to end: three `panoptes synchro` processes share one
// PostgreSQL and four simulated member clusters under churn. One has a clusters file that
// does not parse, one is SIGSTOPped past its lease TTL and resumed, a cluster is removed
// from the file and added again, and a fourth process is started with an identity already
// in use. Sampled throughout from the leases and synchro_members tables: every cluster is
// owned by a working member again within the TTL, the broken member owns nothing and is no
// member, and no lease epoch goes back; from the change log: the resumed member wrote
// nothing after its leases moved on, and no cluster's epochs go back; at the end storage
// equals every member cluster's own list.
import { writeFileSync } from 'node:fs';
import t from 'tap';
import { startSimCluster, type SimCluster } from '../hack/sim/cluster.ts';
import { clusterObjectsCluster } from '../storage/cluster-objects.ts';
import { Store } from '../storage/store.ts';
import { emptyStorageUrl, stopTestPostgres } from '../storage/testing.ts';
import { diffCopy, spawnPanoptes, tempDir, waitUntil, writeClusters, type PanoptesProcess } from './testutil.ts';

// At least PostgreSQL's idle_in_transaction_session_timeout (5 s, storage/connect.ts): a member
// paused inside a write transaction keeps its lease rows share-locked until its session ends,
// so its clusters cannot be taken before that, whatever the TTL.
const TTL_MS = 5000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ids = ['/configmaps'];
const working = ['s1', 's2'];

t.test('a fleet with a broken member, a paused member and a cluster removed and re-added', async (t) => {
  const { url } = await emptyStorageUrl('postgres');
  const store = await Store.open(url);
  const { dir, cleanup } = tempDir();
  const sims: SimCluster[] = [];
  const procs: PanoptesProcess[] = [];
  let sampling: Promise<void> | undefined;
  let sample = true;
  t.teardown(async () => {
    sample = false;
    await sampling;
    for (const s of sims) s.churn.stop();
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    await Promise.all(sims.map((s) => s.close()));
    await store.close();
    await stopTestPostgres();
    cleanup();
  });

  for (let i = 1; i <= 4; i++) {
    const sim = await startSimCluster({ name: `c${i}`, historySize: 100_000 });
    sims.push(sim);
    sim.churn.start({ ratePerSecond: 5, seed: i, resources: ['configmaps'], maxObjects: 40 });
  }
  const names = sims.map((s) => s.name);
  const good = `${dir}/clusters.yaml`;
  const broken = `${dir}/broken.yaml`;
  const writeGood = (clusters: SimCluster[]) => writeClusters(good, clusters.map((s) => ({ name: s.name, server: s.url, resources: ['configmaps'] })));
  writeGood(sims);
  writeFileSync(broken, 'clusters:\n  - name: c1\n    server: [unclosed\n');

  const start = (name: string, file: string) => {
    const p = spawnPanoptes(name, ['synchro', '--storage', url, '--clusters', file, '--identity', name, '--lease-ttl', `${TTL_MS}ms`, '--probe-interval', '500ms', '--metrics-listen', 'off', '--log-level', 'info']);
    procs.push(p);
    return p;
  };
  const members = new Map<string, PanoptesProcess>([
    ['s3', start('s3', broken)],
    ['s1', start('s1', good)],
    ['s2', start('s2', good)],
  ]);

  /** Lease holders of the clusters, unexpired ones only, on the database's clock. */
  const owners = async () => {
    const { now } = await store.members();
    const out = new Map<string, { holder: string; epoch: number }>();
    for (const l of await store.listLeases()) if (l.name.startsWith('cluster/') && l.holder && l.expiresAt > now) out.set(l.name.slice('cluster/'.length), { holder: l.holder, epoch: l.epoch });
    return out;
  };
  const ownedBy = async (m: string) => [...(await owners())].filter(([, o]) => o.holder === m).map(([c]) => c);
  const synced = async (c: string) => ((await store.getCluster(c))?.status as { initialSync?: { complete?: boolean } } | undefined)?.initialSync?.complete === true;

  const allOwned = await waitUntil('every cluster owned by s1 or s2 and synced', async () => {
    const o = await owners();
    if (!names.every((c) => working.includes(o.get(c)?.holder ?? ''))) return false;
    for (const c of names) if (!(await synced(c))) return false;
    return true;
  }, 90_000, 200).catch(() => false);
  if (!allOwned) {
    t.fail(`not every cluster is owned by a working member: ${JSON.stringify([...(await owners())])}; s3's log: ${members.get('s3')!.log.slice(-5).join('\n')}`);
    return;
  }

  // The sampler: who owns what, how long a cluster went without a working owner, epochs.
  const paused = new Set<string>();
  const removed = new Set<string>();
  const lastOwned = new Map(names.map((c) => [c, Date.now()]));
  const longestGap = new Map<string, number>();
  const maxEpoch = new Map<string, number>();
  const problems = new Set<string>();
  sampling = (async () => {
    for (let i = 0; sample && i < 10_000; i++) {
      try {
        const { now, members: rows } = await store.members();
        const leases = await store.listLeases();
        const at = Date.now();
        for (const l of leases) {
          const before = maxEpoch.get(l.name) ?? 0;
          if (l.epoch < before) problems.add(`lease ${l.name} went from epoch ${before} back to ${l.epoch}`);
          maxEpoch.set(l.name, Math.max(before, l.epoch));
          if (l.holder === 's3') problems.add(`the broken member holds ${l.name}`);
        }
        if (rows.some((m) => m.id === 's3' && m.expiresAt > now)) problems.add('the broken member heartbeats');
        for (const c of names) {
          if (removed.has(c)) {
            lastOwned.set(c, at);
            continue;
          }
          const l = leases.find((x) => x.name === `cluster/${c}`);
          if (l?.holder && l.expiresAt > now && working.includes(l.holder) && !paused.has(l.holder)) lastOwned.set(c, at);
          longestGap.set(c, Math.max(longestGap.get(c) ?? 0, at - lastOwned.get(c)!));
        }
      } catch (err) {
        problems.add(`sampling failed: ${(err as Error).message}`);
      }
      await sleep(100);
    }
  })();

  await t.test('a second process with an identity in use refuses to start, naming the other', async (t) => {
    const dup = spawnPanoptes('dup', ['synchro', '--storage', url, '--clusters', good, '--identity', 's1', '--lease-ttl', `${TTL_MS}ms`, '--metrics-listen', 'off', '--log-level', 'info']);
    procs.push(dup);
    const code = await Promise.race([dup.exited, sleep(30_000).then(() => 'still running')]);
    if (code === 'still running') dup.child.kill('SIGKILL');
    t.equal(code, 1, 'it exits with 1');
    t.match(dup.log.join('\n'), /identity s1 is held by another live instance.*host .*pid \d+.*heartbeat \d+(\.\d+)? s ago/, 'and says which instance holds it');
  });

  // Epochs and owners of the paused member's clusters, and the change log's rv once they moved on.
  const pause: { victim: string; epochs: Map<string, number>; movedAt: number; until: number } = { victim: '', epochs: new Map(), movedAt: 0, until: Infinity };
  await t.test('a member SIGSTOPped past its TTL: its clusters are taken over; resumed, it rejoins', async (t) => {
    const counts = await Promise.all(working.map(async (m) => [m, await ownedBy(m)] as const));
    const [victim, mine] = counts.sort((a, b) => b[1].length - a[1].length)[0];
    const before = await owners();
    pause.victim = victim;
    for (const c of mine) pause.epochs.set(c, before.get(c)!.epoch);
    members.get(victim)!.child.kill('SIGSTOP');
    paused.add(victim);
    const moved = await waitUntil(`${victim}'s clusters taken over`, async () => {
      const o = await owners();
      return mine.every((c) => o.get(c) && o.get(c)!.holder !== victim && o.get(c)!.epoch > pause.epochs.get(c)!);
    }, 2 * TTL_MS + 10_000, 100).catch(() => false);
    t.ok(moved, `${mine.join(', ')} taken over from ${victim}`);
    pause.movedAt = await store.watermark();
    await sleep(1000);
    members.get(victim)!.child.kill('SIGCONT');
    paused.delete(victim);
    const rejoined = await waitUntil(`${victim} owns clusters again`, async () => (await ownedBy(victim)).length > 0, 20_000, 200).catch(() => false);
    t.ok(rejoined, `${victim} rejoined and took its share back`);
  });

  await t.test('a cluster removed from the file and added again', async (t) => {
    const gone = sims[3];
    // A removed cluster's lease row is deleted: re-added, its epochs may start below the paused tenure's, so late writes are looked for up to the removal.
    pause.until = await store.watermark();
    writeGood(sims.slice(0, 3));
    removed.add(gone.name);
    const out = await waitUntil(`${gone.name} removed`, async () => !(await store.getCluster(gone.name)) && (await store.storedResources(gone.name)).length === 0, 30_000, 200).catch(() => false);
    t.ok(out, `${gone.name}'s objects and row are gone`);
    writeGood(sims);
    removed.delete(gone.name);
    lastOwned.set(gone.name, Date.now());
    const back = await waitUntil(`${gone.name} synced again`, () => synced(gone.name), 30_000, 200).catch(() => false);
    t.ok(back, `${gone.name} is synced again`);
  });

  await t.test('the fleet settles; storage equals the members', async (t) => {
    const settled = await waitUntil('every cluster owned by a working member, both members owning some', async () => {
      const o = await owners();
      return names.every((c) => working.includes(o.get(c)?.holder ?? '')) && working.every((m) => [...o.values()].some((x) => x.holder === m));
    }, 30_000, 200).catch(() => false);
    t.ok(settled, `owners: ${JSON.stringify([...(await owners())])}`);
    for (const s of sims) s.churn.stop();
    for (const s of sims) {
      let diff: string[] = [];
      await waitUntil(`storage equals ${s.name}`, async () => (diff = await diffCopy(store, s, s.name, ids)).length === 0, 30_000, 200).catch(() => undefined);
      t.same(diff.slice(0, 10), [], `storage equals ${s.name}'s own list`);
    }
    sample = false;
    await sampling;

    t.same([...problems].slice(0, 10), [], 'no lease epoch went back; the broken member never heartbeat nor held a lease');
    const gaps = [...longestGap].filter(([, ms]) => ms > 2 * TTL_MS);
    t.same(gaps, [], `every cluster had a working owner again within the lease TTL of losing one (longest: ${JSON.stringify([...longestGap])})`);

    // The change log: per cluster, epochs never go back; nothing of the paused member's tenure after it moved on.
    const lastEpoch = new Map<string, number>();
    const backwards: string[] = [];
    const late: string[] = [];
    let after = 1;
    for (let page = 0; page < 1000; page++) {
      const changes = await store.changesAfter(after, 5000);
      if (changes.length === 0) break;
      for (const c of changes) {
        const lease = c.cluster === clusterObjectsCluster ? c.name : c.cluster;
        const prev = lastEpoch.get(lease) ?? 0;
        if ((c.epoch ?? 0) < prev) backwards.push(`rv ${c.rv} of ${lease} at epoch ${c.epoch} after epoch ${prev}`);
        lastEpoch.set(lease, Math.max(prev, c.epoch ?? 0));
        const old = pause.epochs.get(lease);
        if (old !== undefined && c.rv > pause.movedAt && c.rv <= pause.until && c.epoch !== null && c.epoch <= old) late.push(`rv ${c.rv} of ${lease} at ${pause.victim}'s epoch ${c.epoch}`);
      }
      after = changes[changes.length - 1].rv;
    }
    t.same(late.slice(0, 10), [], `${pause.victim} wrote nothing under its old leases after they moved on`);
    t.same(backwards.slice(0, 10), [], "no cluster's epochs go back in the change log, across its removal and re-addition");
    const { now, members: rows } = await store.members();
    const s3 = rows.find((m) => m.id === 's3');
    t.notOk(members.get('s3')!.log.some((l) => /joined the synchro members/.test(l)), 's3 never joined');
    t.ok(s3 !== undefined && s3.expiresAt <= now, 's3 is seen, never live: it writes its row expired');
    t.match(s3?.configError, /broken\.yaml/, "s3's row reports its configuration error");
    t.ok(members.get('s3')!.log.some((l) => /cannot use the cluster configuration/.test(l)), 's3 logs why it does not join');
  });

  if (!t.passing()) for (const [name, p] of members) t.comment(`${name}: ${p.log.filter((l) => /lease|member|identity/.test(l)).slice(-20).join('\n')}`);
  for (const [, p] of members) p.child.kill('SIGTERM');
  for (const [name, p] of members) t.equal(await p.exited, 0, `${name} stops cleanly`);
});
