import t from 'tap';
import { stringify } from 'yaml';
import { backends, openTestStore, podEvent, stopTestPostgres } from '../../storage/testing.ts';
import type { Store } from '../../storage/store.ts';
import type { KubeObject, UpstreamEvent } from '../../storage/types.ts';
import { delay, startHub } from '../../hack/testing/watch-engine.ts';
import { createWriteConsistency, dryRunOf, type ProxiedWrite, type WriteConsistency } from './write-consistency.ts';

t.teardown(stopTestPostgres);

const json = (v: unknown) => Buffer.from(JSON.stringify(v));
const pod = (name: string, rv: string, extra: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'n', resourceVersion: rv, ...extra }, spec: {} });
const podWrite = (verb: string, name?: string, more: Partial<ProxiedWrite> = {}): ProxiedWrite => ({ cluster: 'c', group: '', version: 'v1', resource: 'pods', namespace: 'n', ...(name ? { name } : {}), verb, ...more });
const rvIn = (b: Buffer) => (JSON.parse(b.toString()) as KubeObject).metadata?.resourceVersion;
const stored = async (store: Store, name: string) => (await store.get({ cluster: 'c', group: '', resource: 'pods', namespace: 'n', name }))!;

/** One length-delimited protobuf field (tag, length, value). */
function pbField(field: number, ...values: Array<string | Buffer>): Buffer {
  const value = Buffer.concat(values.map((v) => (typeof v === 'string' ? Buffer.from(v) : v)));
  const varint = (n: number) => {
    const out: number[] = [];
    for (; n >= 0x80; n >>>= 7) out.push((n & 0x7f) | 0x80);
    out.push(n);
    return Buffer.from(out);
  };
  return Buffer.concat([varint(field * 8 + 2), varint(value.length), value]);
}

/** kube's protobuf envelope: "k8s\0", then runtime.Unknown { typeMeta: 1, raw: 2 }. */
const envelope = (kind: string, ...raw: Buffer[]) => Buffer.concat([Buffer.from([0x6b, 0x38, 0x73, 0]), pbField(1, pbField(1, 'v1'), pbField(2, kind)), pbField(2, ...raw), pbField(4, '')]);

/** A Pod in protobuf: metadata { name, namespace, uid, resourceVersion (6, when given), generation (varint 7) }, spec { nodeName (10) }. */
const podProto = (rv: string) =>
  envelope('Pod', pbField(1, pbField(1, 'a'), pbField(3, 'n'), pbField(5, 'uid-n-a'), ...(rv ? [pbField(6, rv)] : []), Buffer.from([0x38, 0x02])), pbField(2, pbField(10, 'node-1')));

const deployment = (name: string, rv: string, replicas: number): UpstreamEvent => ({
  type: 'MODIFIED',
  group: 'apps',
  version: 'v1',
  resource: 'deployments',
  object: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: 'n', uid: `uid-${name}`, resourceVersion: rv }, spec: { replicas } },
});

t.test("translateBody: Panoptes' stamped annotations never reach a member", async (t) => {
  // Storage is not asked: nothing here carries a resourceVersion.
  const wc = createWriteConsistency({ store: { get: async () => undefined, memberRvAt: async () => undefined }, changes: { onDispatch: () => () => undefined }, waitMs: 0, synced: (_c, group) => group !== 'metrics.k8s.io' });
  const stamps = { 'panoptes.io/cluster': 'c', 'panoptes.io/upstream-resource-version': '105', keep: 'me' };
  const annotationsIn = (b: Buffer) => (JSON.parse(b.toString()) as KubeObject).metadata?.annotations;
  const obj = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'a', namespace: 'n', annotations: stamps }, spec: {} };
  for (const [verb, type] of [['update', 'application/json'], ['create', 'application/json'], ['patch', 'application/merge-patch+json'], ['patch', 'application/strategic-merge-patch+json'], ['patch', 'application/apply-patch+yaml']]) {
    const out = await wc.translateBody(podWrite(verb, verb === 'create' ? undefined : 'a'), json(obj), type);
    t.same(annotationsIn(out), { keep: 'me' }, `${verb} ${type}: the stamps dropped, the rest kept`);
  }
  const unsynced = await wc.translateBody(podWrite('update', 'a', { group: 'metrics.k8s.io' }), json(obj), 'application/json');
  t.same(annotationsIn(unsynced), { keep: 'me' }, 'a resource Panoptes does not sync too');
  const ops = [
    { op: 'add', path: '/metadata/annotations/panoptes.io~1cluster', value: 'c' },
    { op: 'replace', path: '/metadata/annotations', value: { ...stamps } },
    { op: 'replace', path: '/metadata', value: { name: 'a', annotations: { ...stamps } } },
    { op: 'replace', path: '', value: obj },
    { op: 'add', path: '/metadata/annotations/keep', value: 'me' },
  ];
  const jp = JSON.parse((await wc.translateBody(podWrite('patch', 'a'), json(ops), 'application/json-patch+json')).toString()) as typeof ops;
  t.same(jp, [
    { op: 'replace', path: '/metadata/annotations', value: { keep: 'me' } },
    { op: 'replace', path: '/metadata', value: { name: 'a', annotations: { keep: 'me' } } },
    { op: 'replace', path: '', value: { ...obj, metadata: { ...obj.metadata, annotations: { keep: 'me' } } } },
    { op: 'add', path: '/metadata/annotations/keep', value: 'me' },
  ], 'JSON patch: an op setting a stamp dropped, stamps taken out of the annotations, metadata or object an op sets');
  const yamlBody = Buffer.from(`# mine\napiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations:\n    panoptes.io/cluster: c\n    keep: me\n    panoptes.io/upstream-resource-version: "105"\nspec: {}\n`);
  t.equal((await wc.translateBody(podWrite('patch', 'a'), yamlBody, 'application/apply-patch+yaml')).toString(), '# mine\napiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations:\n    keep: me\nspec: {}\n', 'server-side apply, YAML');
  // Protobuf: ObjectMeta annotations are field 12, one entry { key: 1, value: 2 } each.
  const entry = (k: string, v: string) => pbField(12, pbField(1, k), pbField(2, v));
  const withAnnotations = (...entries: Buffer[]) => envelope('Pod', pbField(1, pbField(1, 'a'), pbField(3, 'n'), ...entries), pbField(2, pbField(10, 'node-1')));
  const pb = withAnnotations(entry('panoptes.io/cluster', 'c'), entry('keep', 'me'), entry('panoptes.io/upstream-resource-version', '105'));
  t.same(await wc.translateBody(podWrite('update', 'a'), pb, 'application/vnd.kubernetes.protobuf'), withAnnotations(entry('keep', 'me')), 'protobuf: the stamp entries dropped, every other byte kept');
  const plain = json({ ...obj, metadata: { name: 'a', annotations: { keep: 'me' } } });
  t.equal(await wc.translateBody(podWrite('update', 'a'), plain, 'application/json'), plain, 'a body without stamps goes out as it came');
});

for (const backend of backends) {
  t.test(backend, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    // A long poll interval: waits end by the hub's wake-ups on commits, not by its polling.
    const hub = await startHub(store, { poll: { intervalMs: 60_000 } });
    t.teardown(() => hub.stop());
    const unsynced = new Set(['metrics.k8s.io/pods']);
    const outcomes: string[] = [];
    const make = (waitMs: number): WriteConsistency =>
      createWriteConsistency({ store, changes: hub, waitMs, synced: (_c, group, resource) => !unsynced.has(`${group}/${resource}`), observe: (outcome) => outcomes.push(outcome) });
    const wc = make(3000);

    await store.applyBatch('c', [podEvent('ADDED', 'n', 'a', '100')]);
    await store.applyBatch('c', [podEvent('MODIFIED', 'n', 'a', '105')]);
    const a = await stored(store, 'a');
    t.equal(a.upstreamRv, '105');
    const current = String(a.rv);
    const older = String(a.rv - 1);

    t.test('translateBody: an update at the current Panoptes rv goes out at the member rv', async (t) => {
      const body = json(pod('a', current, { labels: { big: '1' } }));
      const out = await wc.translateBody(podWrite('update', 'a'), body, 'application/json');
      t.equal(rvIn(out), '105');
      t.equal(out.toString(), body.toString().replace(`"${current}"`, '"105"'), 'only the rv changed, byte for byte');
      const big = Buffer.from(`{"metadata":{"name":"a","resourceVersion":"${current}"},"spec":{"n":123456789012345678901}}`);
      t.equal((await wc.translateBody(podWrite('update', 'a'), big, 'application/json; charset=utf-8')).toString(), big.toString().replace(`"${current}"`, '"105"'), 'a number beyond 2^53 kept as written');
      const twice = Buffer.from(`{"metadata":{"name":"a","resourceVersion":"${current}","labels":{"x":"${current}"}}}`);
      t.same(JSON.parse((await wc.translateBody(podWrite('update', 'a'), twice, 'application/json')).toString()), { metadata: { name: 'a', resourceVersion: '105', labels: { x: current } } }, 'the same digits elsewhere are not touched');
    });

    t.test("translateBody: an older Panoptes rv goes out as the member's rv of that version, for the member to judge", async (t) => {
      // Not refused here: the member answers, after its RBAC (a 403 tells nothing of the object), its own 409.
      t.equal(rvIn(await wc.translateBody(podWrite('update', 'a'), json(pod('a', older)), 'application/json')), '100', 'the version at that rv was member rv 100');
      // An rv that is no version of this object: one below the stored member rv, which the member object cannot be at any more.
      t.equal(rvIn(await wc.translateBody(podWrite('patch', 'a'), json({ metadata: { resourceVersion: '99999' } }), 'application/merge-patch+json')), '104', 'an rv that was never this object');
      await store.applyBatch('c', [deployment('web', '7', 1)]);
      const d = { ...podWrite('update', 'web'), group: 'apps', resource: 'deployments' };
      t.equal(rvIn(await wc.translateBody(d, json({ metadata: { name: 'web', resourceVersion: older } }), 'application/json')), '6', "another object's version");
    });

    t.test('translateBody: an unknown rv with no member rv below the stored one is refused here, as kube words it', async (t) => {
      await store.applyBatch('c', [podEvent('ADDED', 'n', 'one', '1')]);
      await t.rejects(wc.translateBody(podWrite('update', 'one'), json(pod('one', '99999')), 'application/json'), {
        code: 409,
        reason: 'Conflict',
        message: 'Operation cannot be fulfilled on pods "one": the object has been modified; please apply your changes to the latest version and try again',
        details: { name: 'one', kind: 'pods' },
      });
      await t.rejects(wc.translateBody(podWrite('delete', 'one'), json({ preconditions: { resourceVersion: '99999' } }), 'application/json'), {
        code: 409,
        message: 'Operation cannot be fulfilled on pods "one": Precondition failed: ResourceVersion in precondition does not match the object',
      });
      await t.rejects(wc.translateBody(podWrite('patch', 'one'), json([{ op: 'test', path: '/metadata/resourceVersion', value: '99999' }]), 'application/json-patch+json'), {
        code: 422,
        reason: 'Invalid',
        details: { causes: [{ reason: 'UnexpectedServerResponse', message: 'testing value /metadata/resourceVersion failed: test failed' }] },
      });
    });

    t.test('translateBody: what is left alone', async (t) => {
      for (const body of [json(pod('a', '')), json({ metadata: { name: 'a' } }), json(pod('a', '0')), Buffer.alloc(0), Buffer.from('{not json')]) {
        t.equal(await wc.translateBody(podWrite('update', 'a'), body, 'application/json'), body, `unchanged: ${body.toString() || '(empty)'}`);
      }
      const create = json(pod('new', current));
      t.equal(await wc.translateBody(podWrite('create'), create, 'application/json'), create, 'a create: the member refuses an rv on it as kube does');
      const unknown = json(pod('not-stored', current));
      t.equal(await wc.translateBody(podWrite('update', 'not-stored'), unknown, 'application/json'), unknown, 'an object storage does not hold: the member decides');
      const metrics = json(pod('a', older));
      t.equal(await wc.translateBody({ ...podWrite('update', 'a'), group: 'metrics.k8s.io' }, metrics, 'application/json'), metrics, 'a resource Panoptes does not sync: its rvs are the member\'s');
    });

    t.test('translateBody: a non-numeric rv is a 400', async (t) => {
      await t.rejects(wc.translateBody(podWrite('update', 'a'), json(pod('a', 'abc')), 'application/json'), { code: 400, reason: 'BadRequest', message: /metadata\.resourceVersion: Invalid value: "abc"/ });
    });

    t.test("translateBody: the member's own rv from a write answered before the sync is sent on", async (t) => {
      // storage holds member rv 105 at Panoptes rv `current`; 105 is no Panoptes version of this object
      t.not(current, '105');
      const out = await wc.translateBody(podWrite('update', 'a'), json(pod('a', '105')), 'application/json');
      t.equal(rvIn(out), '105');
    });

    t.test("translateBody: an old Panoptes rv that happens to be the member's current rv is that old version", async (t) => {
      const first = (await store.applyBatch('c', [podEvent('ADDED', 'n', 'clash', '1')])).changes[0].rv;
      await store.applyBatch('c', [podEvent('MODIFIED', 'n', 'clash', String(first))]);
      t.equal((await stored(store, 'clash')).upstreamRv, String(first), 'the member rv equals an older Panoptes rv of the object');
      t.equal(rvIn(await wc.translateBody(podWrite('update', 'clash'), json(pod('clash', String(first))), 'application/json')), '1', "the member's rv of that version, which the member refuses");
    });

    t.test('translateBody: patches of every type', async (t) => {
      const merge = await wc.translateBody(podWrite('patch', 'a'), json({ metadata: { resourceVersion: current }, spec: { x: 1 } }), 'application/merge-patch+json');
      t.equal(rvIn(merge), '105');
      const smp = await wc.translateBody(podWrite('patch', 'a'), json({ metadata: { resourceVersion: current } }), 'application/strategic-merge-patch+json');
      t.equal(rvIn(smp), '105');
      const ops = [
        { op: 'test', path: '/metadata/resourceVersion', value: current },
        { op: 'replace', path: '/metadata', value: { name: 'a', resourceVersion: current } },
        { op: 'add', path: '/spec/x', value: current },
      ];
      const jp = JSON.parse((await wc.translateBody(podWrite('patch', 'a'), json(ops), 'application/json-patch+json')).toString()) as typeof ops;
      t.same(jp.map((o) => o.value), ['105', { name: 'a', resourceVersion: '105' }, current], 'test and metadata ops translated, others not');
      const olderOps = JSON.parse((await wc.translateBody(podWrite('patch', 'a'), json([{ op: 'test', path: '/metadata/resourceVersion', value: older }, { op: 'replace', path: '/metadata/resourceVersion', value: older }]), 'application/json-patch+json')).toString()) as typeof ops;
      t.same(olderOps.map((o) => o.value), ['100', '100'], "an older version's test and replace: its member rv, for the member to judge");
      const applyJson = await wc.translateBody(podWrite('patch', 'a'), json(pod('a', current)), 'application/apply-patch+yaml');
      t.equal(rvIn(applyJson), '105', 'server-side apply, JSON');
      const yamlBody = Buffer.from(`# mine\napiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  namespace: n\n  resourceVersion: "${current}"\nspec: {}\n`);
      const applyYaml = (await wc.translateBody(podWrite('patch', 'a'), yamlBody, 'application/apply-patch+yaml')).toString();
      t.equal(applyYaml, yamlBody.toString().replace(`"${current}"`, '"105"'), 'server-side apply, YAML: only the rv changed');
      t.match((await wc.translateBody(podWrite('patch', 'a'), Buffer.from(stringify(pod('a', older))), 'application/apply-patch+yaml')).toString(), /resourceVersion: "100"/, 'YAML: an older version too');
    });

    t.test('translateBody: delete preconditions, evictions, deletecollection, protobuf', async (t) => {
      const del = await wc.translateBody(podWrite('delete', 'a'), json({ kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid: 'uid-n-a', resourceVersion: current } }), 'application/json');
      t.same(JSON.parse(del.toString()).preconditions, { uid: 'uid-n-a', resourceVersion: '105' });
      const olderDel = await wc.translateBody(podWrite('delete', 'a'), json({ preconditions: { resourceVersion: older } }), 'application/json');
      t.equal(JSON.parse(olderDel.toString()).preconditions.resourceVersion, '100', "an older version's precondition: its member rv");
      const ev = await wc.translateBody(podWrite('create', 'a', { subresource: 'eviction' }), json({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'a' }, deleteOptions: { preconditions: { resourceVersion: current } } }), 'application/json');
      t.equal(JSON.parse(ev.toString()).deleteOptions.preconditions.resourceVersion, '105');
      await t.rejects(wc.translateBody(podWrite('deletecollection'), json({ preconditions: { resourceVersion: current } }), 'application/json'), { code: 400, message: /deletecollection/ });
      const plain = json({ propagationPolicy: 'Background' });
      t.equal(await wc.translateBody(podWrite('deletecollection'), plain, 'application/json'), plain);
      await t.rejects(wc.translateBody(podWrite('update', 'a'), Buffer.from('{"not":"protobuf"}'), 'application/vnd.kubernetes.protobuf'), { code: 400, message: /no k8s protobuf envelope/ });
      const scale = await wc.translateBody(podWrite('patch', 'web', { group: 'apps', resource: 'deployments', subresource: 'scale' }), json({ metadata: { resourceVersion: String((await store.get({ cluster: 'c', group: 'apps', resource: 'deployments', namespace: 'n', name: 'web' }))!.rv) } }), 'application/merge-patch+json');
      t.equal(rvIn(scale), '7', "a subresource's rv is its parent's");
    });

    t.test('translateBody: protobuf bodies of typed clients', async (t) => {
      const pb = 'application/vnd.kubernetes.protobuf';
      const update = podProto(current);
      const out = await wc.translateBody(podWrite('update', 'a'), update, pb);
      t.same(out, podProto('105'), 'the rv rewritten, every other byte kept');
      t.same(await wc.translateBody(podWrite('update', 'a'), podProto(older), pb), podProto('100'), 'an older version: its member rv');
      const noRv = podProto('');
      t.equal(await wc.translateBody(podWrite('update', 'a'), noRv, pb), noRv);
      const del = envelope('DeleteOptions', pbField(2, pbField(1, 'uid-n-a'), pbField(2, current)));
      t.same(await wc.translateBody(podWrite('delete', 'a'), del, pb), envelope('DeleteOptions', pbField(2, pbField(1, 'uid-n-a'), pbField(2, '105'))));
      const eviction = (rv: string) => envelope('Eviction', pbField(1, pbField(1, 'a')), pbField(2, pbField(1, Buffer.from([0x08, 0x1e])), pbField(2, pbField(2, rv))));
      t.same(await wc.translateBody(podWrite('create', 'a', { subresource: 'eviction' }), eviction(current), pb), eviction('105'));
      const create = podProto(current);
      t.equal(await wc.translateBody(podWrite('create'), create, pb), create, 'a create: untouched');
      const twice = envelope('Pod', pbField(1, pbField(6, current)), pbField(1, pbField(1, 'a')));
      await t.rejects(wc.translateBody(podWrite('update', 'a'), twice, pb), { code: 400, message: /field 1 given 2 times/ });
    });

    t.test('settle: waits for synchro, then answers the object as Panoptes stores it', async (t) => {
      const member = pod('a', '110', { uid: 'uid-n-a' });
      const settling = wc.settle(podWrite('update', 'a'), member);
      await delay(200);
      await store.applyBatch('c', [podEvent('MODIFIED', 'n', 'a', '110')]);
      const r = await settling;
      const s = await stored(store, 'a');
      t.same(r, { object: JSON.parse(s.object), warnings: [] });
      t.equal((r.object as KubeObject).metadata?.resourceVersion, String(s.rv), "Panoptes' rv");
      t.equal((r.object as KubeObject).metadata?.annotations?.['panoptes.io/cluster'], 'c');
      // Synced (not the deadline's outcome), so before the 3 s deadline, thus not by the 60 s poll: woken by the dispatch.
      t.equal(outcomes.at(-1), 'synced', 'observed: woken by the dispatch, not by the 60 s poll nor the deadline');
    });

    t.test('settle: storage already past the write answers at once', async (t) => {
      await store.applyBatch('c', [podEvent('MODIFIED', 'n', 'a', '120')]);
      const r = await wc.settle(podWrite('patch', 'a'), pod('a', '115', { uid: 'uid-n-a' }));
      t.equal((r.object as KubeObject).metadata?.annotations?.['panoptes.io/upstream-resource-version'], '120', 'the newer stored version, as a get shows it');
      t.same(r.warnings, []);
    });

    t.test('settle: a create is waited for by the name the member gave it', async (t) => {
      const settling = wc.settle(podWrite('create'), pod('gen-x1', '130', { uid: 'uid-n-gen-x1' }));
      await delay(50);
      await store.applyBatch('c', [podEvent('ADDED', 'n', 'gen-x1', '130')]);
      const r = await settling;
      t.equal((r.object as KubeObject).metadata?.resourceVersion, String((await stored(store, 'gen-x1')).rv));
    });

    t.test('settle: when the wait runs out, the member object with a Warning', async (t) => {
      const short = make(300);
      const member = pod('a', '999', { uid: 'uid-n-a' });
      const started = Date.now();
      const r = await short.settle(podWrite('update', 'a'), member);
      t.ok(Date.now() - started >= 290, 'waited');
      t.equal(r.object, member);
      t.equal(r.warnings.length, 1);
      t.equal(r.warnings[0], 'update of pods "a" in cluster c is not synced by Panoptes yet after 0.3s: this is the member\'s answer, with the member\'s resourceVersion');
      t.equal(outcomes.at(-1), 'timeout', 'observed');
      const none = await make(0).settle(podWrite('update', 'a'), member);
      t.equal(none.warnings.length, 1, '--proxy-write-wait 0: no wait, the same Warning');
    });

    t.test('settle: a delete waits until the object is gone', async (t) => {
      await store.applyBatch('c', [podEvent('ADDED', 'n', 'd1', '200')]);
      const status = { kind: 'Status', apiVersion: 'v1', status: 'Success', details: { name: 'd1', kind: 'pods', uid: 'uid-n-d1' } };
      const settling = wc.settle(podWrite('delete', 'd1'), status);
      let settled = false;
      void settling.then(() => (settled = true));
      await delay(100);
      t.equal(settled, false, 'not while storage still has it');
      await store.applyBatch('c', [podEvent('DELETED', 'n', 'd1', '201')]);
      t.same(await settling, { object: status, warnings: [] }, "the member's Status: nothing is stored any more");

      await store.applyBatch('c', [podEvent('ADDED', 'n', 'd2', '210')]);
      const terminating = pod('d2', '211', { uid: 'uid-n-d2', deletionTimestamp: '2026-12-01T00:00:00Z', finalizers: ['x'] });
      const marking = wc.settle(podWrite('delete', 'd2'), terminating);
      await delay(50);
      const ev = podEvent('MODIFIED', 'n', 'd2', '211');
      ev.object.metadata!.deletionTimestamp = '2026-12-01T00:00:00Z';
      await store.applyBatch('c', [ev]);
      const r = await marking;
      t.equal((r.object as KubeObject).metadata?.deletionTimestamp, '2026-12-01T00:00:00Z');
      t.equal((r.object as KubeObject).metadata?.resourceVersion, String((await stored(store, 'd2')).rv), 'terminating: the stored object');
    });

    t.test('settle: a scale answers the Scale with the parent\'s Panoptes rv', async (t) => {
      const w = podWrite('patch', 'web', { group: 'apps', resource: 'deployments', subresource: 'scale' });
      const scale = { apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: 'web', namespace: 'n', uid: 'uid-web', resourceVersion: '8' }, spec: { replicas: 3 }, status: { replicas: 1 } };
      const settling = wc.settle(w, scale);
      await delay(50);
      await store.applyBatch('c', [deployment('web', '8', 3)]);
      const r = await settling;
      const parent = (await store.get({ cluster: 'c', group: 'apps', resource: 'deployments', namespace: 'n', name: 'web' }))!;
      t.same(r, { object: { ...scale, metadata: { ...scale.metadata, resourceVersion: String(parent.rv) } }, warnings: [] });
      const status = wc.settle({ ...w, subresource: 'status' }, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'n', uid: 'uid-web', resourceVersion: '8' } });
      t.same((await status).object, JSON.parse(parent.object), 'status: the stored parent');
    });

    t.test('settle: a dry run answers the member at once', async (t) => {
      const s = await stored(store, 'a');
      const dry = pod('a', s.upstreamRv, { uid: 'uid-n-a', labels: { would: 'be' } });
      t.same(await wc.settle({ ...podWrite('patch', 'a'), dryRun: true }, dry), { object: dry, warnings: [] }, 'not the stored object: the dry run changed nothing there');
      const gone = { kind: 'Status', apiVersion: 'v1', status: 'Success', details: { name: 'a', kind: 'pods', uid: 'uid-n-a' } };
      // With a deadline far beyond the bounded wait: an answer within it did not wait for the deletion.
      let timer: NodeJS.Timeout | undefined;
      const answer = await Promise.race([make(600_000).settle({ ...podWrite('delete', 'a'), dryRun: true }, gone), new Promise<'waited'>((r) => (timer = setTimeout(() => r('waited'), 30_000)))]);
      clearTimeout(timer);
      t.same(answer, { object: gone, warnings: [] }, 'no wait for a deletion that will not come');
    });

    t.test('settle: storage failing answers the member object with a Warning, never an error', async (t) => {
      const failing = createWriteConsistency({
        store: { get: async () => Promise.reject(new Error('storage is down')), memberRvAt: async () => undefined },
        changes: hub,
        waitMs: 1000,
        synced: () => true,
        observe: (outcome) => outcomes.push(outcome),
      });
      const member = pod('a', '999', { uid: 'uid-n-a' });
      const r = await failing.settle(podWrite('update', 'a'), member);
      t.equal(r.object, member);
      t.match(r.warnings, [/could not be checked in storage/]);
      t.equal(outcomes.at(-1), 'error');
    });

    t.test('settle: what is not waited for', async (t) => {
      const metrics = { kind: 'PodMetrics', metadata: { name: 'a', resourceVersion: '1' } };
      t.same(await wc.settle({ ...podWrite('update', 'a'), group: 'metrics.k8s.io' }, metrics), { object: metrics, warnings: [] }, 'a resource Panoptes does not sync');
      const eviction = { kind: 'Status', apiVersion: 'v1', status: 'Success' };
      t.same(await wc.settle(podWrite('create', 'a', { subresource: 'eviction' }), eviction), { object: eviction, warnings: [] });
      const list = { kind: 'PodList', metadata: { resourceVersion: '5' }, items: [] };
      t.same(await wc.settle(podWrite('deletecollection'), list), { object: list, warnings: [] });
    });
  });
}

t.test('dryRunOf: the query, or a DeleteOptions body', async (t) => {
  const q = (s: string) => new URLSearchParams(s);
  t.equal(dryRunOf(q('dryRun=All'), Buffer.alloc(0)), true);
  t.equal(dryRunOf(q('fieldManager=kubectl'), Buffer.alloc(0)), false);
  t.equal(dryRunOf(q(''), Buffer.from(' {"kind":"DeleteOptions","dryRun":["All"]}')), true);
  t.equal(dryRunOf(q(''), Buffer.from('{"kind":"DeleteOptions","propagationPolicy":"Background"}')), false);
  t.equal(dryRunOf(q(''), Buffer.from('{"dryRun":[]}')), false);
  t.equal(dryRunOf(q(''), Buffer.from('not json')), false);
});
