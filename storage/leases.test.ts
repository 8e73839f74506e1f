// Leases and fenced writes, on both backends (members: members.test.ts).
import t from 'tap';
import { clusterLease, FencedError, type Fence } from './leases.ts';
import { Store } from './store.ts';
import { backends, openTestStore, podEvent, stopTestPostgres } from './testing.ts';
import type { UpstreamEvent } from './types.ts';

t.teardown(stopTestPostgres);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const backend of backends) {
  t.test(`${backend}: leases`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const L = clusterLease('east');

    t.equal(await store.acquireLease(L, 'a', 10_000), 1, 'a free lease: epoch 1');
    t.equal(await store.acquireLease(L, 'b', 10_000), undefined, 'held by another, unexpired: refused');
    t.equal(await store.acquireLease(L, 'a', 10_000), 2, 'its own holder may take it again (the epoch still grows)');
    t.same([...(await store.renewLeases('a', [{ name: L, epoch: 2 }], 10_000))], [L]);
    t.same([...(await store.renewLeases('a', [{ name: L, epoch: 1 }], 10_000))], [], 'renewing an older epoch fails');
    t.equal(await store.acquireLease(L, 'b', 10_000, ['a']), 3, 'a dead holder is as good as none');
    t.ok(await store.releaseLease(L, 'b', 3));
    t.equal(await store.acquireLease(L, 'a', 10_000), 4, 'a released lease is free at once');
    t.equal(await store.acquireLease(L, 'b', 100), undefined);
    t.equal(await store.acquireLease(L, 'b', 100), undefined, 'a refused acquisition uses up no epoch');
    await store.renewLeases('a', [{ name: L, epoch: 4 }], 100);
    await sleep(250);
    t.same([...(await store.renewLeases('a', [{ name: L, epoch: 4 }], 10_000))], [], 'an expired lease is not renewed');
    t.equal(await store.acquireLease(L, 'b', 10_000), 5, 'an expired lease is free');
    const [lease] = await store.listLeases();
    t.match(lease, { name: L, holder: 'b', epoch: 5 });
    t.ok(lease.expiresAt > lease.renewedAt);
  });

  t.test(`${backend}: fenced writes`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const L = clusterLease('east');
    const batch = (cluster: string, fence: Fence, ...events: UpstreamEvent[]) => store.applyBatches([{ cluster, events, fence }]).then(([r]) => r);
    const a: Fence = { lease: L, holder: 'a', epoch: (await store.acquireLease(L, 'a', 200))! };
    const ok = await batch('east', a, podEvent('ADDED', 'n', 'p1', '1'));
    t.equal(ok.changes.length, 1, 'the holder writes');
    t.equal((await store.changesAfter(1, 10))[0].epoch, a.epoch, 'each change records the epoch it was written under');

    // a is paused past its lease; b takes it over.
    await sleep(300);
    const b: Fence = { lease: L, holder: 'b', epoch: (await store.acquireLease(L, 'b', 10_000))! };
    t.ok(b.epoch > a.epoch);
    const before = await store.watermark();
    const err = await batch('east', a, podEvent('MODIFIED', 'n', 'p1', '2'), podEvent('ADDED', 'n', 'p2', '3')).catch((e: unknown) => e);
    t.type(err, FencedError, 'the old holder is fenced');
    t.match((err as FencedError).found, { holder: 'b', epoch: b.epoch });
    t.equal(await store.watermark(), before, 'and wrote nothing');
    t.equal((await store.get({ cluster: 'east', group: '', resource: 'pods', namespace: 'n', name: 'p2' })), undefined);
    await t.rejects(store.setClusterStatus('east', { phase: 'Stale' }, a), FencedError, 'nor its status');
    t.equal((await batch('east', b, podEvent('MODIFIED', 'n', 'p1', '2'))).changes.length, 1, 'the new holder writes');

    // Expired but not yet taken: still fenced (the holder cannot know whether someone took it).
    const c: Fence = { lease: clusterLease('west'), holder: 'c', epoch: (await store.acquireLease(clusterLease('west'), 'c', 100))! };
    await sleep(250);
    await t.rejects(batch('west', c, podEvent('ADDED', 'n', 'x', '1')), FencedError, 'an expired lease fences too');
    await t.rejects(batch('nowhere', { lease: clusterLease('nowhere'), holder: 'c', epoch: 1 }, podEvent('ADDED', 'n', 'x', '1')), FencedError, 'a lease that does not exist');
  });

  t.test(`${backend}: epochs only grow, for the life of the database`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const L = clusterLease('east');
    const first = (await store.acquireLease(L, 'a', 60_000))!;
    const other = (await store.acquireLease(clusterLease('west'), 'b', 60_000))!;
    t.ok(other > first, 'one sequence for every lease: an epoch names one tenure of the whole database');
    const old: Fence = { lease: L, holder: 'a', epoch: first };
    t.equal((await store.applyBatches([{ cluster: 'east', events: [podEvent('ADDED', 'n', 'p1', '1')], fence: old }]))[0].changes.length, 1);

    // The cluster is removed (its lease row goes with it) and added again: a holder of the
    // same name takes the new lease.
    await store.deleteLease(L, 'a', first);
    t.same(await store.listLeasesNamed([L]), [], 'the lease row is deleted with its cluster');
    const again = (await store.acquireLease(L, 'a', 60_000))!;
    t.ok(again > other, `the re-created lease starts above every earlier epoch (${again} > ${other})`);
    const before = await store.watermark();
    await t.rejects(store.applyBatches([{ cluster: 'east', events: [podEvent('ADDED', 'n', 'stale', '2')], fence: old }]), FencedError, 'the fence of the earlier tenure is refused');
    t.equal(await store.watermark(), before, 'and wrote nothing');

    // Acquisitions, releases, expiries and removals: every new tenure is above every one before.
    let last = again;
    for (let i = 0; i < 6; i++) {
      if (i % 3 === 0) await store.deleteLease(L, 'a', last);
      else if (i % 3 === 1) await store.releaseLease(L, 'a', last);
      const e = (await store.acquireLease(L, 'a', 60_000))!;
      t.ok(e > last, `tenure ${i}: ${e} > ${last}`);
      last = e;
    }
    const epochs = (await store.changesAfter(1, 100)).map((c) => c.epoch);
    t.same(epochs, [first], 'the change log names the tenure it was written under');
  });

  t.test(`${backend}: a write in flight holds off the acquisition until it commits`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const L = clusterLease('east');
    const a: Fence = { lease: L, holder: 'a', epoch: (await store.acquireLease(L, 'a', 150))! };
    let acquired = false;
    let acquiredBeforeCommit: boolean | undefined;
    let inside!: () => void;
    const entered = new Promise<void>((r) => (inside = r));
    const write = store.applyBatches([{ cluster: 'east', events: [podEvent('ADDED', 'n', 'p1', '1')], fence: a }], {
      beforeCommit: async () => {
        inside();
        await sleep(500); // the lease expires, and b tries to take it, meanwhile
        acquiredBeforeCommit = acquired;
      },
    });
    await entered;
    await sleep(200);
    const epoch = await store.acquireLease(L, 'b', 10_000).then((e) => {
      acquired = true;
      return e;
    });
    const [result] = await write;
    t.equal(result.changes.length, 1, 'the write that passed its fence check commits');
    t.ok(epoch !== undefined && epoch > a.epoch, 'then the lease moves on');
    t.equal(acquiredBeforeCommit, false, 'the acquisition waited for the write to commit: no write lands after the lease moved on');
  });
}

t.test("postgres: a write in flight holds off acquisitions, not its holder's renewals", async (t) => {
  const { store, close } = await openTestStore('postgres');
  t.teardown(close);
  const L = clusterLease('east');
  const a: Fence = { lease: L, holder: 'a', epoch: (await store.acquireLease(L, 'a', 60_000))! };
  let inside!: () => void;
  const entered = new Promise<void>((r) => (inside = r));
  // The write stays in flight until the test lets it commit (at most 30 s): a renewal that
  // waited for it would not return before that, whatever the machine's speed.
  let letCommit!: () => void;
  let safety: NodeJS.Timeout | undefined;
  const gate = new Promise<void>((r) => {
    letCommit = r;
    safety = setTimeout(r, 30_000);
  });
  let committed = false;
  const write = store
    .applyBatches([{ cluster: 'east', events: [podEvent('ADDED', 'n', 'p1', '1')], fence: a }], {
      beforeCommit: async () => {
        inside();
        await gate; // a write queued behind others for the rv lock holds its fence this long
      },
    })
    .then((r) => ((committed = true), r));
  await entered;
  const renewed = await store.renewLeases('a', [{ name: L, epoch: a.epoch }], 60_000);
  t.ok(renewed.has(L), 'renewed');
  t.notOk(committed, 'while the write was still in flight: without waiting for it');
  // Another holder's acquisition (the lease released meanwhile) still waits for the write.
  await store.releaseLease(L, 'a', a.epoch);
  let acquired = false;
  const acquiring = store.acquireLease(L, 'b', 10_000).then((e) => ((acquired = true), e));
  await sleep(300);
  t.notOk(acquired, "b's acquisition waits while the write is in flight");
  letCommit();
  clearTimeout(safety);
  const epoch = await acquiring;
  t.ok(committed, "b's acquisition returned only once the write had committed");
  t.ok(epoch !== undefined && epoch > a.epoch);
  await write;
});

t.test('postgres: acquisitions at once from several processes: one holder per lease, every epoch once', async (t) => {
  const { url, close } = await openTestStore('postgres');
  t.teardown(close);
  const stores = await Promise.all([1, 2, 3, 4].map(() => Store.open(url)));
  t.teardown(() => Promise.all(stores.map((s) => s.close())));
  const names = ['a', 'b', 'c', 'd', 'e', 'f'].map(clusterLease);
  const attempts = await Promise.all(stores.flatMap((s, i) => names.map(async (name) => ({ name, holder: `m${i}`, epoch: await s.acquireLease(name, `m${i}`, 60_000) }))));
  const won = attempts.filter((a) => a.epoch !== undefined);
  t.same(won.map((a) => a.name).sort(), [...names].sort(), 'each lease taken exactly once');
  const epochs = won.map((a) => a.epoch!);
  t.equal(new Set(epochs).size, epochs.length, 'no epoch given twice');
  const leases = await stores[0].listLeases();
  t.same(leases.map((l) => [l.name, l.holder, l.epoch]), won.sort((x, y) => x.name.localeCompare(y.name)).map((a) => [a.name, a.holder, a.epoch]), 'as stored');
});

t.test('postgres: a writer paused inside its transaction holds the rv counter for at most the idle timeout', async (t) => {
  const { url, close } = await openTestStore('postgres');
  t.teardown(close);
  const paused = await Store.open(url, { idleInTransactionTimeoutMs: 1000 });
  const other = await Store.open(url);
  t.teardown(async () => {
    await paused.close().catch(() => undefined);
    await other.close();
  });
  // The paused process: its batch took the rv counter's lock, then stopped (SIGSTOP, a GC pause).
  let release!: () => void;
  const stalled = paused
    .applyBatch('east', [podEvent('ADDED', 'n', 'p1', '1')], {
      beforeCommit: () => new Promise<void>((r) => (release = r)),
    })
    .catch((e: unknown) => e);
  await sleep(200);
  const started = performance.now();
  const r = await Promise.race([other.applyBatch('west', [podEvent('ADDED', 'n', 'p2', '1')]), sleep(10_000).then(() => undefined)]);
  const waited = performance.now() - started;
  release();
  t.equal(r?.changes.length, 1, `another writer commits after ${Math.round(waited)} ms: the server ended the idle transaction and released its locks`);
  t.type(await stalled, Error, 'the paused batch did not commit');
  t.equal((await other.list({ group: '', resource: 'pods', clusters: ['east'] })).items.length, 0, 'and wrote nothing');
});

