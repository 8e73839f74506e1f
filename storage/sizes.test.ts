// storedSizes on both backends: every table and index of the schema with its bytes, the
// columns' average bytes equal to the JSON as served, the change log's previous objects
// counted, and reclaiming the space of a compacted log shrinks the changes table.
import t from 'tap';
import { storedSizes } from './sizes.ts';
import { backends, compactNow, openTestStore, podEvent, stopTestPostgres } from './testing.ts';

t.teardown(stopTestPostgres);

const labels = { app: 'web', tier: 'front' };
const pods = (type: 'ADDED' | 'MODIFIED', count: number, rv: number) =>
  Array.from({ length: count }, (_, i) => podEvent(type, 'ns', `pod-${i}`, String(rv + i), { labels, phase: type === 'ADDED' ? 'Pending' : 'Running', owner: `rs-${i % 3}` }));

for (const backend of backends) {
  t.test(`${backend}: bytes of every table and index, and of each copy of an object`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    await store.applyBatch('east', pods('ADDED', 200, 1));
    await store.applyBatch('east', pods('MODIFIED', 50, 1000));

    const s = await storedSizes(store.conn);
    t.equal(s.objects, 200);
    t.equal(s.labelRows, 400, 'one label row per object and key');
    t.same(s.changes, { added: 200, modified: 50, deleted: 0 });

    const served = (await store.list({ group: '', resource: 'pods' })).items.map((o) => Buffer.byteLength(o.object));
    t.ok(Math.abs(s.columns.object - served.reduce((a, b) => a + b, 0) / served.length) < 0.01, 'objects.object: the JSON as served');
    t.ok(s.columns.objectBinary > 0.5 * s.columns.object, 'the binary JSON form measured');
    t.ok(s.columns.fields > 10, 'pods have selectable fields');
    t.equal(s.columns.jsonDoc, 0, 'no object needs a second document');
    t.ok(s.columns.changePrevObject > 0.9 * s.columns.object, 'a MODIFIED change holds the object before it too');

    const bytes = (name: string) => s.relations.find((r) => r.name === name)?.bytes ?? -1;
    for (const name of ['objects', 'objects_list_order', 'objects_by_owner', 'object_labels', 'object_labels_by_value', 'changes', 'changes_by_resource', 'object_counts']) {
      t.ok(bytes(name) > 0, `${name} measured`);
    }
    for (const r of s.relations) t.ok(r.bytes >= 0 && Number.isInteger(r.bytes), `${r.name}: whole bytes`);
    const total = s.relations.reduce((a, r) => a + r.bytes, 0);
    t.ok(s.databaseBytes >= total, 'the database holds every relation');

    await compactNow(store, { minAgeMs: 0, minCount: 0 });
    const before = bytes('changes');
    const after = await storedSizes(store.conn, { reclaim: true });
    t.same(after.changes, { added: 0, modified: 0, deleted: 0 });
    t.ok(after.relations.find((r) => r.name === 'changes')!.bytes < before, 'the compacted log gave its space back');
    t.equal(after.objects, 200);
  });
}
