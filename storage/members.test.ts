// Synchro members on both backends: heartbeats on the database clock, one instance per
// identity, the machine a member runs on, and leaving.
import t from 'tap';
import { backends, openTestStore, stopTestPostgres } from './testing.ts';

t.teardown(stopTestPostgres);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const member = (id: string, instance: string, over: Record<string, unknown> = {}) => ({ id, host: 'h', pid: 1, bootId: 'boot-1', pidNamespace: 'pid:[1]', instance, ...over });

for (const backend of backends) {
  t.test(`${backend}: members`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const { now, heldBy } = await store.heartbeat(member('m1', 'i1'), 5000);
    t.equal(heldBy, undefined, 'a new identity is written');
    await store.heartbeat(member('m2', 'i2', { pid: 2, bootId: 'boot-2' }), 5000);
    const { members, now: later } = await store.members();
    t.same(members.map((m) => m.id), ['m1', 'm2']);
    t.ok(later >= now && members[0].expiresAt > later, 'alive until its expiry, on the database clock');
    t.match(members[1], { host: 'h', pid: 2, bootId: 'boot-2', pidNamespace: 'pid:[1]', instance: 'i2' }, 'the machine and instance are recorded');
    await store.removeMember('m1');
    t.same((await store.members()).members.map((m) => m.id), ['m2']);
  });

  t.test(`${backend}: rows of members long gone are forgotten`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    await store.heartbeat(member('crashed', 'c'), 50);
    await store.heartbeat(member('alive', 'a'), 60_000);
    await sleep(150);
    t.same((await store.members()).members.map((m) => m.id), ['alive', 'crashed'], 'an expired row stays for a while (its leases may still name it)');
    t.same((await store.members(50)).members.map((m) => m.id), ['alive'], 'past the limit it is not reported...');
    t.same((await store.members()).members.map((m) => m.id), ['alive'], '...and deleted');
    t.equal((await store.heartbeat(member('crashed', 'c2'), 5000)).heldBy, undefined, 'its identity can be taken again');
  });

  t.test(`${backend}: one instance per identity`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    await store.heartbeat(member('m', 'first'), 300);
    const started = (await store.members()).members[0].startedAt;
    await sleep(20);
    t.equal((await store.heartbeat(member('m', 'first'), 300)).heldBy, undefined, 'its own instance renews');
    t.equal((await store.members()).members[0].startedAt, started, 'a renewal keeps startedAt');
    const refused = await store.heartbeat(member('m', 'second', { host: 'other', pid: 9 }), 300);
    t.match(refused.heldBy, { id: 'm', host: 'h', pid: 1, instance: 'first' }, 'another instance is refused while the first is alive, and told who holds it');
    t.match((await store.members()).members[0], { host: 'h', instance: 'first' }, 'nothing written');
    await store.removeMember('m', 'second');
    t.equal((await store.members()).members.length, 1, 'leaving removes only its own instance');
    await sleep(400);
    t.equal((await store.heartbeat(member('m', 'second', { host: 'other', pid: 9 }), 300)).heldBy, undefined, 'once the first expired, another instance takes the identity');
    const row = (await store.members()).members[0];
    t.match(row, { host: 'other', pid: 9, instance: 'second' });
    t.ok(row.startedAt > started, 'a new instance starts anew');
    t.match((await store.heartbeat(member('m', 'first'), 300)).heldBy, { instance: 'second' }, 'the first, back, finds it taken');
    await store.removeMember('m', 'second');
    t.same((await store.members()).members, [], 'its holder removes it');
  });

  t.test(`${backend}: two instances starting at once: one wins`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const results = await Promise.all(['a', 'b', 'c', 'd'].map((i) => store.heartbeat(member('m', i), 5000)));
    t.equal(results.filter((r) => r.heldBy === undefined).length, 1, 'exactly one instance holds the identity');
    const holder = (await store.members()).members[0].instance;
    t.ok(results.every((r) => r.heldBy === undefined || r.heldBy.instance === holder), 'the others are told which');
  });
}
