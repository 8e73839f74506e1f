// A synchro member's row carries its configuration problem, on both backends; a row written
// with TTL 0 (a process that cannot work, reporting itself) is seen and not live, and another
// instance of the identity may take it.
import t from 'tap';
import { backends, openTestStore, stopTestPostgres } from './testing.ts';

const record = (instance: string, configError: string | null) => ({ id: 'm1', host: 'h', pid: 1, instance, configError });

for (const backend of backends) {
  t.test(`${backend}: the member row reports its configuration error`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    t.same(await store.heartbeat(record('i1', 'clusters.yaml: line 1: unexpected end'), 0).then((r) => r.heldBy), undefined, 'written');
    let { now, members } = await store.members();
    t.match(members, [{ id: 'm1', instance: 'i1', configError: 'clusters.yaml: line 1: unexpected end' }]);
    t.ok(members[0].expiresAt <= now, 'seen, not live');

    t.equal((await store.heartbeat(record('i2', null), 60_000)).heldBy, undefined, 'another instance takes the reported row');
    ({ now, members } = await store.members());
    t.match(members, [{ id: 'm1', instance: 'i2', configError: null }]);
    t.ok(members[0].expiresAt > now, 'live');
    t.match((await store.heartbeat(record('i1', 'still broken'), 0)).heldBy, { instance: 'i2' }, 'the reporting instance cannot take a live row back');
    t.match((await store.members()).members, [{ instance: 'i2', configError: null }]);

    await store.heartbeat(record('i2', 'broke later'), 60_000);
    t.match((await store.members()).members, [{ instance: 'i2', configError: 'broke later' }], 'a live member reports a later problem too');
  });
}

t.teardown(stopTestPostgres);
