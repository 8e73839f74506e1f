// "A paused member writes nothing", over every write a lease holder makes, on both backends:
// each method of `fencedWrites` (store.ts) is driven with a fence whose lease expired (its
// holder paused past the TTL), was taken over by another holder, was taken again by the same
// holder (an older epoch), or was deleted and re-created (a removed and re-added cluster):
// each raises FencedError and changes no row. The list is checked against the Store itself:
// every public method whose parameters carry a Fence must be in it, and every other method
// must be named below as a read, a lease operation or an unleased write, which synchro never
// calls.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import ts from 'typescript';
import { clusterLease, compactorLease, importerLease, FencedError, type Fence } from './leases.ts';
import { fencedWrites, Store, unleasedWrites, type FencedWrite } from './store.ts';
import { backends, openTestStore, podEvent, stopTestPostgres } from './testing.ts';

t.teardown(stopTestPostgres);

const here = dirname(fileURLToPath(import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How to make one fenced write do something, again and again: `setup` once under a valid fence, then `write`. */
interface Driver {
  lease: string;
  setup?: (store: Store, fence: Fence) => Promise<void>;
  write: (store: Store, fence: Fence) => Promise<unknown>;
}

let n = 0;
const clusterObject = (name: string) => ({
  apiVersion: 'panoptes.io/v1alpha1',
  kind: 'Cluster',
  metadata: { name, uid: `uid-${name}`, generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { source: 'file' },
  status: { phase: `P${++n}` },
});
const openAPIEntry = () => ({ groupVersion: 'api/v1', format: 'v3' as const, hash: `h${++n}`, upstreamHash: `u${n}`, body: `{"n":${n}}` });
const east = clusterLease('east');

// A Record over the list: a fenced write added to the Store without a driver here does not compile.
const drivers: Record<FencedWrite, Driver> = {
  applyBatches: { lease: east, write: (s, fence) => s.applyBatches([{ cluster: 'east', events: [podEvent('ADDED', 'n', `p${++n}`, String(n))], fence }]) },
  writeClusterObject: { lease: east, write: (s, fence) => s.writeClusterObject('east', () => ({ action: 'put', object: clusterObject('east') }), fence) },
  writeClusterObjects: {
    lease: east,
    write: (s, fence) => s.writeClusterObjects([{ name: 'east', decide: () => ({ action: 'put', object: { ...clusterObject('east'), status: { n: ++n } } }), fence }]),
  },
  writeOwnObject: {
    lease: east,
    write: (s, fence) =>
      s.writeOwnObject(
        { resource: 'multiclusterservices', namespace: 'shop', name: 'web' },
        'east',
        () => ({ action: 'put', object: { apiVersion: 'panoptes.io/v1alpha1', kind: 'MultiClusterService', metadata: { name: 'web', namespace: 'shop', uid: 'uid-web' }, status: { n: ++n } } }),
        fence,
      ),
  },
  writeOwnObjectUnder: {
    lease: east,
    write: (s, fence) =>
      s.writeOwnObjectUnder({ resource: 'multiclusterservices', namespace: 'shop', name: 'web' }, [{ cluster: 'east', fence }], () => ({
        action: 'put',
        object: { apiVersion: 'panoptes.io/v1alpha1', kind: 'MultiClusterService', metadata: { name: 'web', namespace: 'shop', uid: 'uid-web' }, status: { n: ++n } },
      })),
  },
  writeImportedClusterObject: {
    lease: importerLease,
    write: (s, fence) =>
      s.writeImportedClusterObject('imported', () => ({ action: 'put', object: { apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'imported', uid: 'uid-imported' }, spec: { source: 'clustersource/fleet', n: ++n } } }), fence),
  },
  writeClusterSourceObject: {
    lease: importerLease,
    write: (s, fence) =>
      s.writeClusterSourceObject('fleet', () => ({ action: 'put', object: { apiVersion: 'panoptes.io/v1alpha1', kind: 'ClusterSource', metadata: { name: 'fleet', uid: 'uid-fleet' }, status: { n: ++n } } }), fence),
  },
  setClusterStatus: {
    lease: east,
    setup: (s, fence) => s.upsertCluster('east', { server: 'https://east' }, fence),
    write: (s, fence) => s.setClusterStatus('east', { phase: `P${++n}` }, fence),
  },
  setClusterStatuses: {
    lease: east,
    setup: (s, fence) => s.upsertCluster('east', { server: 'https://east' }, fence),
    write: (s, fence) => s.setClusterStatuses([{ name: 'east', status: { phase: `P${++n}` }, fence }]),
  },
  upsertCluster: { lease: east, write: (s, fence) => s.upsertCluster('east', { server: `https://east-${++n}` }, fence) },
  deleteClusterRow: {
    lease: east,
    setup: (s, fence) => s.upsertCluster('east', { server: 'https://east' }, fence),
    write: (s, fence) => s.deleteClusterRow('east', fence),
  },
  replaceClusterOpenAPI: { lease: east, write: (s, fence) => s.replaceClusterOpenAPI('east', [openAPIEntry()], fence) },
  deleteClusterOpenAPI: {
    lease: east,
    setup: (s, fence) => s.replaceClusterOpenAPI('east', [openAPIEntry()], fence),
    write: (s, fence) => s.deleteClusterOpenAPI('east', fence),
  },
  compact: {
    lease: compactorLease,
    setup: async (s) => {
      for (let i = 0; i < 5; i++) await s.applyBatch('c', [podEvent('ADDED', 'n', `c${i}`, String(i + 1))]);
    },
    write: (s, fence) => s.compact({ minAgeMs: 0, minCount: 0 }, fence),
  },
  repairCounts: {
    lease: compactorLease,
    setup: async (s) => {
      await s.applyBatch('c', [podEvent('ADDED', 'n', 'a', '1'), podEvent('ADDED', 'm', 'b', '2')]);
      await s.conn.knex('object_counts').update({ n: -3 });
    },
    write: (s, fence) => s.repairCounts(fence),
  },
};

/** Every row of every table but the leases' and members' own (the lease operations of a test change those). */
async function dump(store: Store): Promise<string> {
  const k = store.conn.knex;
  const tables =
    store.dialect === 'sqlite'
      ? ((await k.raw("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")) as Array<{ name: string }>).map((r) => r.name)
      : ((await k.raw('SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()')) as { rows: Array<{ name: string }> }).rows.map((r) => r.name);
  const out: Record<string, unknown> = {};
  for (const table of tables.filter((x) => !['leases', 'synchro_members', 'schema_migrations'].includes(x)).sort()) {
    const rows = (await k(table).select('*')) as Array<Record<string, unknown>>;
    out[table] = rows.map((r) => JSON.stringify(r, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).sort();
  }
  return JSON.stringify(out);
}

for (const backend of backends) {
  t.test(`${backend}: a fence that no longer holds its lease writes nothing, whatever the write`, async (t) => {
    for (const name of fencedWrites) {
      await t.test(name, async (t) => {
        const { store, close } = await openTestStore(backend);
        t.teardown(close);
        const d = drivers[name];
        const acquire = async (holder: string, ttlMs = 60_000): Promise<Fence> => {
          const epoch = await store.acquireLease(d.lease, holder, ttlMs);
          if (epoch === undefined) throw new Error(`${holder} could not take ${d.lease}`);
          return { lease: d.lease, holder, epoch };
        };
        const refused = async (fence: Fence, what: string) => {
          const before = await dump(store);
          const err = await d.write(store, fence).then(
            () => undefined,
            (e: unknown) => e,
          );
          t.type(err, FencedError, `${what}: FencedError`);
          t.equal(await dump(store), before, `${what}: nothing written`);
        };

        const a1 = await acquire('a');
        await d.setup?.(store, a1);
        const a2 = await acquire('a');
        t.ok(a2.epoch > a1.epoch);
        await refused(a1, 'an older epoch of the same holder');

        t.ok(await store.releaseLease(d.lease, 'a', a2.epoch));
        const b1 = await acquire('b');
        await refused(a2, 'a lease another holder took over');

        // b pauses past its TTL: the lease expires, and nobody has taken it yet.
        t.same([...(await store.renewLeases('b', [{ name: d.lease, epoch: b1.epoch }], 1))], [d.lease]);
        await sleep(30);
        await refused(b1, 'an expired lease');

        // The lease is deleted (its cluster removed) and created again (the cluster re-added).
        const b2 = await acquire('b');
        await store.deleteLease(d.lease, 'b', b2.epoch);
        t.same(await store.listLeasesNamed([d.lease]), [], 'the lease row is gone');
        await refused(b2, 'a deleted lease');
        const b3 = await acquire('b');
        t.ok(b3.epoch > b2.epoch, 'a re-created lease starts above every earlier epoch');
        await refused(b2, 'the fence of an earlier tenure of a re-created lease');

        // A valid fence of another lease does not authorize this one.
        const other = d.lease === compactorLease ? clusterLease('east') : clusterLease('west');
        const otherEpoch = (await store.acquireLease(other, 'b', 60_000))!;
        const before = await dump(store);
        await t.rejects(d.write(store, { lease: other, holder: 'b', epoch: otherEpoch }), `a fence of ${other} is not one of ${d.lease}`);
        t.equal(await dump(store), before, 'a fence of another lease: nothing written');

        const beforeGood = await dump(store);
        await d.write(store, b3);
        t.not(await dump(store), beforeGood, 'the holder itself writes (so "nothing written" above means something)');
      });
    }
  });
}

/** The public methods of Store whose parameters carry a Fence (found by the type checker, so none is missed). */
function storeMethods(): Array<{ name: string; takesFence: boolean }> {
  const configPath = join(here, '..', 'tsconfig.json');
  const config = ts.parseJsonConfigFileContent(ts.readConfigFile(configPath, (p) => ts.sys.readFile(p)).config, ts.sys, dirname(configPath));
  const file = join(here, 'store.ts');
  const program = ts.createProgram([file], config.options);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file)!;
  const cls = source.statements.find((s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && s.name?.text === 'Store')!;
  const carriesFence = (type: ts.Type, depth: number): boolean => {
    const sym = type.aliasSymbol ?? type.getSymbol();
    if (sym?.getName() === 'Fence') return true;
    if (depth === 0) return false;
    if (type.isUnionOrIntersection()) return type.types.some((x) => carriesFence(x, depth));
    if (checker.isArrayType(type)) return checker.getTypeArguments(type as ts.TypeReference).some((x) => carriesFence(x, depth - 1));
    return type.getProperties().some((p) => carriesFence(checker.getTypeOfSymbolAtLocation(p, cls), depth - 1));
  };
  const out: Array<{ name: string; takesFence: boolean }> = [];
  for (const m of cls.members) {
    if (!ts.isMethodDeclaration(m) && !ts.isGetAccessorDeclaration(m)) continue;
    const mods = ts.getCombinedModifierFlags(m);
    if (mods & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected | ts.ModifierFlags.Static)) continue;
    const name = m.name.getText(source);
    const takesFence = m.parameters.some((p) => carriesFence(checker.getTypeAtLocation(p), 3));
    out.push({ name, takesFence });
  }
  return out;
}

/** What the Store's other public members are: a new one must be named here, so nobody adds an unfenced write unnoticed. */
const reads = [
  'dialect',
  'writeProtocol',
  'onCommit',
  'changesAfter',
  'changesOfResources',
  'watermark',
  'meta',
  'get',
  'list',
  'aggregate',
  'getCluster',
  'listClusters',
  'clusterIdentities',
  'getClusterObject',
  'listClusterRegistrations',
  'getOwnObject',
  'listOwnObjects',
  'storedKeys',
  'knownClusterNames',
  'storedResources',
  'clusterOpenAPI',
  'openAPIDocumentByUpstream',
  'openAPIDocuments',
  'ping',
  'analyze',
  'replicationStatus',
  'memberRvAt',
  // The change log and, in the same statement, whether the database is still a standby.
  'changesAfterInRecovery',
  // The installation's id: made once at the first ask (as a migration makes a table), then only read.
  'installationId',
  // Another pool to the same database (synchro's heartbeats): it writes nothing itself.
  'separatePool',
  'close',
];
const leaseOperations = ['heartbeat', 'members', 'removeMember', 'listLeases', 'listLeasesNamed', 'acquireLease', 'renewLeases', 'releaseLease', 'deleteLease'];

t.test('the fenced writes are every Store method that takes a Fence, and every other member is named', async (t) => {
  const methods = storeMethods();
  t.ok(methods.length > 20, 'the checker sees the Store');
  t.same(methods.filter((m) => m.takesFence).map((m) => m.name).sort(), [...fencedWrites].sort(), 'fencedWrites lists exactly the methods that take a Fence');
  t.same(Object.keys(drivers).sort(), [...fencedWrites].sort(), 'and the test above drives each of them');
  const named = new Set<string>([...fencedWrites, ...unleasedWrites, ...reads, ...leaseOperations]);
  const unnamed = methods.map((m) => m.name).filter((m) => !named.has(m));
  t.same(unnamed, [], 'a new Store method is a fenced write (it takes a Fence), an unleased write, a lease operation or a read: name it in store.ts or in this test');
  t.same(
    methods.filter((m) => (unleasedWrites as readonly string[]).includes(m.name) && m.takesFence).map((m) => m.name),
    [],
    'an unleased write takes no fence',
  );
});

t.test('synchro, which writes only as a lease holder, calls no unleased write', async (t) => {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && name !== 'testutil.ts') files.push(p);
    }
  };
  walk(join(here, '..', 'synchro'));
  t.ok(files.length > 10, 'the walk sees synchro');
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    const calls = unleasedWrites.filter((m) => new RegExp(`\\.${m}\\(`).test(text));
    t.same(calls, [], `${f.slice(here.length - 'storage'.length)} calls no unleased write`);
  }
});
