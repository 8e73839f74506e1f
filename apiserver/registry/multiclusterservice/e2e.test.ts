// End to end: exporting a Service with the real kubectl. `panoptes apiserver` (a process,
// SQLite) and kubectl through the all-clusters view and at the server root: `apply` a
// MultiClusterService (created with the finalizer), apply again (a merge patch), `get mcs`
// with the columns (-o wide, -A with NAMESPACE), a status written as synchro's dispatcher
// writes it (a Store holding a consumer cluster's lease), `explain`, `patch` (merge and JSON),
// `apply --dry-run=server` (nothing written), a stale `replace` (409), a bad spec (422 with
// causes), unknown fields (Strict from kubectl), `get -w` seeing a change, and `delete`
// waiting on the finalizer until the lease holder releases it.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { mcsFinalizer } from '../../../api/multicluster-service.ts';
import { writeKubeconfig } from '../../../cli/commands/kubeconfig.ts';
import { spawnPanoptes } from '../../../hack/panoptes-process.ts';
import { freePort } from '../../../storage/testing/postgres.ts';
import { get } from '../../../hack/sim/testutil.ts';
import { clusterLease } from '../../../storage/leases.ts';
import type { OwnObjectState, OwnObjectWrite } from '../../../storage/own-objects.ts';
import { Store } from '../../../storage/store.ts';
import { emptyStorageUrl, takeLease } from '../../../storage/testing.ts';
import type { KubeObject } from '../../../storage/types.ts';
import { waitUntil } from '../../../synchro/testutil.ts';

const M = '/apis/panoptes.io/v1alpha1/namespaces/shop/multiclusterservices';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Resolves with fn()'s value once it is truthy (every 100 ms, at most timeoutMs). */
const until = <T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> => waitUntil(what, fn, timeoutMs, 100) as Promise<T>;

t.test('exporting a Service with kubectl: MultiClusterService on panoptes apiserver', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-mcs-e2e-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { url: storage, cleanup } = await emptyStorageUrl('sqlite');
  t.teardown(cleanup);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const api = spawnPanoptes('apiserver', ['apiserver', '--storage', storage, '--insecure-listen', `127.0.0.1:${port}`]);
  t.teardown(() => api.stop());
  await until('the apiserver serving', async () => (await get(`${base}/readyz`)).status === 200, 30_000).catch((err: Error) => {
    throw new Error(`${err.message}; stderr: ${api.stderr()}`);
  });
  // synchro's side, in this process: the same storage, written as the holder of a consumer cluster's lease.
  const store = await Store.open(storage);
  t.teardown(() => store.close());
  const asSynchro = async (decide: (cur: OwnObjectState | undefined) => OwnObjectWrite) => {
    const fence = await takeLease(store, clusterLease('west'), 'synchro-e2e');
    try {
      return await store.writeOwnObject({ resource: 'multiclusterservices', namespace: 'shop', name: 'web' }, 'west', decide, fence);
    } finally {
      await store.releaseLease(fence.lease, fence.holder, fence.epoch);
    }
  };

  const kubeconfig = join(dir, 'kubeconfig');
  await writeKubeconfig(kubeconfig, { panoptes: { server: base, clusters: [] } });
  const cache = join(dir, 'cache');
  const kubectl = (args: string[], timeoutMs = 60_000): Promise<Run> =>
    new Promise((resolve) => {
      execFile('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', cache, ...args], { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, stdout, stderr });
      });
    });
  const root = (args: string[], timeoutMs?: number) => kubectl(['--server', base, ...args], timeoutMs);
  const file = (name: string, doc: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, stringify(doc));
    return path;
  };
  const manifest = {
    apiVersion: 'panoptes.io/v1alpha1',
    kind: 'MultiClusterService',
    metadata: { name: 'web', namespace: 'shop', labels: { team: 'storefront' } },
    spec: { providerClusters: ['east'], consumerClusters: ['west', 'lab'], ports: [{ name: 'http', port: 80 }] },
  };

  await t.test('apply, apply again, get', async (t) => {
    const first = await kubectl(['apply', '-f', file('web.yaml', manifest)]);
    t.equal(first.code, 0, first.stderr);
    t.match(first.stdout, /multiclusterservice\.panoptes\.io\/web created/);
    const created = (await get(`${base}${M}/web`)).json;
    t.match(created, { metadata: { namespace: 'shop', generation: 1, finalizers: [mcsFinalizer], annotations: { 'kubectl.kubernetes.io/last-applied-configuration': /"providerClusters":\["east"\]/ } } });
    const again = await kubectl(['apply', '-f', file('web.yaml', { ...manifest, spec: { ...manifest.spec, providerNotReady: { policy: 'RemoveImmediately' } } })]);
    t.equal(again.code, 0, again.stderr);
    t.match(again.stdout, /multiclusterservice\.panoptes\.io\/web configured/);
    t.match((await get(`${base}${M}/web`)).json, { metadata: { generation: 2 }, spec: { providerNotReady: { policy: 'RemoveImmediately' } } });
    const unchanged = await kubectl(['apply', '-f', join(dir, 'web.yaml')]);
    t.match(unchanged.stdout, /multiclusterservice\.panoptes\.io\/web unchanged/);
    t.equal((await kubectl(['apply', '-f', file('api.yaml', { ...manifest, metadata: { name: 'api', namespace: 'billing' }, spec: {} })])).code, 0);

    const list = await kubectl(['get', 'mcs', '-n', 'shop']);
    t.equal(list.code, 0, list.stderr);
    t.match(list.stdout, /^NAME\s+PROVIDERS\s+CONSUMERS\s+ENDPOINTS\s+READY\s+AGE\n/);
    t.match(list.stdout, /\nweb\s+1\s+2\s+0\s+0\/0\s+\d+s\n/);
    const byName = await root(['get', 'multiclusterservice', 'web', '-n', 'shop', '-o', 'jsonpath={.metadata.uid}']);
    t.equal(byName.stdout, created.metadata.uid, 'the server root serves the same objects');
  });

  await t.test('status from synchro: READY, ENDPOINTS, -o wide, -A', async (t) => {
    const ok = (type: string) => ({ type, status: 'True', reason: 'Dispatched', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' });
    await asSynchro((cur) =>
      cur
        ? {
            action: 'put',
            object: {
              ...cur.object,
              status: {
                observedGeneration: 2,
                providers: [{ cluster: 'east', endpoints: 4, ready: true }],
                consumers: [
                  { cluster: 'west', serviceApplied: true, endpointSlices: 2, endpoints: 4, conditions: [ok('ServiceApplied'), ok('EndpointSlicesDispatched')] },
                  { cluster: 'lab', serviceApplied: false, endpointSlices: 0, endpoints: 0, lastError: 'Conflict: the Service web exists and was not created by Panoptes', conditions: [] },
                ],
              },
            } as KubeObject,
          }
        : { action: 'none' },
    );
    const list = await kubectl(['get', 'mcs', '-n', 'shop']);
    t.match(list.stdout, /\nweb\s+1\s+2\s+4\s+1\/2\s+\d+s\n/);
    const wide = await kubectl(['get', 'mcs', '-n', 'shop', '-o', 'wide']);
    t.match(wide.stdout, /^NAME\s+PROVIDERS\s+CONSUMERS\s+ENDPOINTS\s+READY\s+AGE\s+PORTS\s+POLICY\s+MESSAGE\n/);
    t.match(wide.stdout, /\nweb\s+1\s+2\s+4\s+1\/2\s+\S+\s+http:80\s+RemoveImmediately\s+lab: Conflict: the Service web exists and was not created by Panoptes\n/);
    const all = await kubectl(['get', 'mcs', '-A']);
    t.equal(all.code, 0, all.stderr);
    t.match(all.stdout, /^NAMESPACE\s+NAME\s+PROVIDERS\s+CONSUMERS\s+ENDPOINTS\s+READY\s+AGE\n/);
    t.match(all.stdout, /\nbilling\s+api\s+all\s+all\s+0\s+0\/0\s+/);
    t.match(all.stdout, /\nshop\s+web\s+1\s+2\s+4\s+1\/2\s+/);
    const labelled = await root(['get', 'mcs', '-A', '-l', 'team=storefront', '-o', 'name']);
    t.equal(labelled.stdout.trim(), 'multiclusterservice.panoptes.io/web');
    const resources = await root(['api-resources', '--api-group', 'panoptes.io']);
    t.match(resources.stdout, /multiclusterservices\s+mcs\s+panoptes\.io\/v1alpha1\s+true\s+MultiClusterService/);
  });

  await t.test('explain', async (t) => {
    const spec = await kubectl(['explain', 'multiclusterservice.spec']);
    t.equal(spec.code, 0, spec.stderr);
    t.match(spec.stdout, /KIND:\s+MultiClusterService/);
    for (const f of ['providerClusters', 'consumerClusters', 'ports', 'providerNotReady']) t.match(spec.stdout, new RegExp(`\\n\\s+${f}\\s`), f);
    const policy = await root(['explain', 'mcs.spec.providerNotReady.policy']);
    t.equal(policy.code, 0, policy.stderr);
    t.match(policy.stdout, /KeepForGracePeriod/);
    t.match(policy.stdout, /RemoveImmediately/);
  });

  await t.test('patch, server dry-run, 409, 422, unknown fields', async (t) => {
    const merge = await kubectl(['patch', 'mcs', 'web', '-n', 'shop', '--type', 'merge', '-p', JSON.stringify({ spec: { consumerClusters: ['west', 'lab', 'north'] } })]);
    t.equal(merge.code, 0, merge.stderr);
    t.match(merge.stdout, /multiclusterservice\.panoptes\.io\/web patched/);
    const jp = await kubectl(['patch', 'mcs', 'web', '-n', 'shop', '--type', 'json', '-p', JSON.stringify([{ op: 'replace', path: '/spec/ports/0/port', value: 8080 }])]);
    t.equal(jp.code, 0, jp.stderr);
    const patched = (await get(`${base}${M}/web`)).json;
    t.same(patched.spec.consumerClusters, ['west', 'lab', 'north']);
    t.same(patched.spec.ports, [{ name: 'http', port: 8080 }]);
    t.equal(patched.metadata.generation, 4);
    t.equal(patched.status.providers[0].endpoints, 4, "synchro's status kept");

    const before = (await get(`${base}${M}/web`)).json.metadata.resourceVersion;
    const dry = await kubectl(['apply', '--dry-run=server', '-f', file('dry.yaml', { ...manifest, spec: { consumerClusters: ['nowhere'] } })]);
    t.equal(dry.code, 0, dry.stderr);
    t.match(dry.stdout, /multiclusterservice\.panoptes\.io\/web configured \(server dry run\)/);
    t.equal((await get(`${base}${M}/web`)).json.metadata.resourceVersion, before, 'a server dry run writes nothing');

    const current = await kubectl(['get', 'mcs', 'web', '-n', 'shop', '-o', 'json']);
    const obj = JSON.parse(current.stdout) as KubeObject;
    const replaced = await kubectl(['replace', '-f', file('replace.yaml', { ...obj, spec: { ...(obj.spec as object), providerClusters: ['east', 'south'] } })]);
    t.equal(replaced.code, 0, replaced.stderr);
    const stale = await kubectl(['replace', '-f', file('stale.yaml', { ...obj, spec: { ...(obj.spec as object), providerClusters: ['east', 'far'] } })]);
    t.not(stale.code, 0);
    t.match(stale.stderr, /Operation cannot be fulfilled on multiclusterservices\.panoptes\.io "web": the object has been modified; please apply your changes to the latest version and try again/);

    const bad = await kubectl(['apply', '-f', file('bad.yaml', { ...manifest, metadata: { name: 'bad', namespace: 'shop' }, spec: { providerClusters: ['East'], ports: [{ port: 70000 }], providerNotReady: { policy: 'Never' } } })]);
    t.not(bad.code, 0);
    t.match(bad.stderr, /The MultiClusterService "bad" is invalid/);
    t.match(bad.stderr, /spec\.providerClusters\[0\]: Invalid value: "East"/);
    t.match(bad.stderr, /spec\.ports\[0\]\.port: Invalid value: 70000: must be between 1 and 65535, inclusive/);
    t.match(bad.stderr, /spec\.providerNotReady\.policy: Unsupported value: "Never"/);
    const typo = await kubectl(['apply', '-f', file('typo.yaml', { ...manifest, metadata: { name: 'typo', namespace: 'shop' }, spec: { consumerCluster: ['west'] } })]);
    t.not(typo.code, 0, 'kubectl asks for strict field validation');
    t.match(typo.stderr, /unknown field "spec\.consumerCluster"/);
    t.equal((await get(`${base}${M}/typo`)).status, 404);
    const named = await kubectl(['create', '-f', file('named.yaml', { ...manifest, metadata: { name: 'Web_1', namespace: 'shop' } })]);
    t.match(named.stderr, /metadata\.name: Invalid value: "Web_1": a MultiClusterService is named after the Service it exports: a DNS-1035 label/);
  });

  await t.test('get -w, then delete waits on the finalizer until synchro releases it', async (t) => {
    const w = spawn('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', cache, 'get', 'mcs', 'web', '-n', 'shop', '-w', '--output-watch-events'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let watched = '';
    w.stdout.setEncoding('utf8').on('data', (d: string) => (watched += d));
    const watchExited = new Promise<void>((r) => w.on('exit', () => r()));
    t.teardown(async () => {
      w.kill('SIGKILL');
      await watchExited;
    });
    await until('the watch listing web', async () => /ADDED\s+web\s/.test(watched), 20_000);

    const deleting = kubectl(['delete', 'mcs', 'web', '-n', 'shop', '--timeout', '60s'], 90_000);
    const marked = await until('web marked for deletion', async () => {
      const o = (await get(`${base}${M}/web`)).json;
      return o?.metadata?.deletionTimestamp ? o : undefined;
    });
    t.same(marked.metadata.finalizers, [mcsFinalizer], 'held by the finalizer');
    await until('the watch showing the deletion mark', async () => /MODIFIED\s+web\s/.test(watched), 20_000);
    t.equal((await get(`${base}${M}/web`)).status, 200, 'still there while a consumer is not cleaned up');
    // Every consumer cleaned up: synchro removes the finalizer, and the object goes.
    const released = await asSynchro((cur) => {
      if (!cur) return { action: 'none' };
      const md = cur.object.metadata ?? {};
      const finalizers = (Array.isArray(md.finalizers) ? (md.finalizers as string[]) : []).filter((f) => f !== mcsFinalizer);
      return md.deletionTimestamp && finalizers.length === 0 ? { action: 'delete' } : { action: 'put', object: { ...cur.object, metadata: { ...md, finalizers } } };
    });
    t.equal(released.change?.type, 'DELETED');
    const done = await deleting;
    t.equal(done.code, 0, done.stderr);
    t.match(done.stdout, /multiclusterservice\.panoptes\.io "web" deleted/);
    await until('the watch showing DELETED', async () => /DELETED\s+web\s/.test(watched), 20_000);
    const gone = await kubectl(['get', 'mcs', 'web', '-n', 'shop', '--ignore-not-found', '-o', 'name']);
    t.equal(gone.code, 0, gone.stderr);
    t.equal(gone.stdout, '', 'gone');
    t.match((await get(`${base}${M}/web`)).json, { code: 404, message: 'multiclusterservices.panoptes.io "web" not found' });
    const rest = await kubectl(['get', 'mcs', '-A', '-o', 'name']);
    t.equal(rest.stdout.trim(), 'multiclusterservice.panoptes.io/api');
  });
});
