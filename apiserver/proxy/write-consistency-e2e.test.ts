// End to end: the real kubectl writes through Panoptes' one-cluster view to a simulated member,
// with synchro syncing it into storage and the apiserver proxying writes (SQLite and
// PostgreSQL). Each write's answer comes after its sync (read-your-writes), so a `get` right
// after it shows it; a watch through Panoptes sees it; a PUT with a stale Panoptes
// resourceVersion is the member's 409, one with the current one goes through (translated to the member's).
import { execFile, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { startSimCluster } from '../../hack/sim/cluster.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import type { KubeObject } from '../../storage/types.ts';
import { backends, openTestStore, seedCluster, stopTestPostgres } from '../../storage/testing.ts';
import { startSynchro } from '../../synchro/synchro.ts';
import { fastTimings, waitUntil } from '../../synchro/testutil.ts';
import { createApiserver } from '../server.ts';
import type { MemberCredentials } from './members.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');
t.teardown(stopTestPostgres);

const P = '/apis/panoptes.io/v1alpha1/resources';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function kubectl(kubeconfig: string, cacheDir: string, args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 30_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', cacheDir, ...args], { timeout: timeoutMs, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, stdout, stderr });
    });
  });
}

/** A kubeconfig whose server is the one-cluster view of `cluster`, namespace shop. */
function writeViewKubeconfig(dir: string, base: string, cluster: string): string {
  const file = join(dir, 'kubeconfig');
  writeFileSync(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: cluster, cluster: { server: `${base}${P}/clusters/${cluster}` } }],
      users: [{ name: 'dev', user: {} }],
      contexts: [{ name: cluster, context: { cluster, user: 'dev', namespace: 'shop' } }],
      'current-context': cluster,
    }),
  );
  return file;
}

const configMap = (color: string, extra: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'shop', ...extra }, data: { color } });
const labels = { app: 'web' };
const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'shop' }, spec: { replicas: 1, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'web', image: 'web:1' }] } } } };

for (const backend of backends) {
  t.test(`kubectl writes through Panoptes read their writes (${backend})`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'panoptes-proxy-rv-e2e-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const east = await startSimCluster({ name: 'east' });
    t.teardown(() => east.close());
    east.crud.create(east.registry.lookup('', 'v1', 'namespaces')!, 'v1', undefined, { metadata: { name: 'shop' } }, {});

    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const clustersFile = join(dir, 'clusters.yaml');
    writeFileSync(clustersFile, stringify({ clusters: [{ name: 'east', server: east.url, resources: ['namespaces', 'configmaps', 'pods', 'apps/deployments', 'apps/replicasets'] }] }));
    const synchro = await startSynchro({ store, clustersFile, timings: fastTimings });
    t.teardown(() => synchro.stop());
    t.ok(await synchro.waitForInitialSync(30_000), 'initial sync');

    const credentials: MemberCredentials = { lookup: async (name) => (name === 'east' ? { connection: { server: east.url }, fingerprint: east.url } : undefined) };
    const api = await createApiserver({ store, catalogOptions: { refreshMs: 200 }, log: logger('test'), proxy: { credentials, unauthenticatedUser: { name: 'dev', groups: ['system:authenticated'], extra: {} } } });
    t.teardown(() => api.close());
    const base = await api.listen('127.0.0.1', 0);
    await waitUntil('east Ready in the catalog', () => api.deps.catalog.cluster('east')?.status.ready === true && api.deps.catalog.view('east')?.find('', 'v1', 'configmaps') !== undefined, 30_000);

    const kubeconfig = writeViewKubeconfig(dir, base, 'east');
    const cache = join(dir, 'cache');
    const k = (args: string[], env?: NodeJS.ProcessEnv) => kubectl(kubeconfig, cache, args, env);
    const manifest = (name: string, doc: unknown) => {
      const file = join(dir, name);
      writeFileSync(file, stringify(doc));
      return file;
    };
    const getJson = async (what: string[]): Promise<KubeObject> => {
      const r = await k(['get', ...what, '-o', 'json']);
      if (r.code !== 0) throw new Error(`kubectl get ${what.join(' ')}: ${r.stderr}`);
      return JSON.parse(r.stdout) as KubeObject;
    };
    const memberCm = () => east.crud.get(east.registry.lookup('', 'v1', 'configmaps')!, 'shop', 'settings') as KubeObject & { data: Record<string, string> };

    await t.test('kubectl apply (client-side), then get shows the write at once', async (t) => {
      const created = await k(['apply', '-f', manifest('cm.yaml', configMap('blue')), '-o', 'json']);
      t.equal(created.code, 0, created.stderr);
      const answer = JSON.parse(created.stdout) as KubeObject;
      t.equal(answer.metadata?.annotations?.['panoptes.io/cluster'], 'east', 'the answer is the object as Panoptes stores it');
      const got = await getJson(['configmap', 'settings']);
      t.same((got as { data?: unknown }).data, { color: 'blue' });
      t.equal(got.metadata?.resourceVersion, answer.metadata?.resourceVersion, 'the same version as the answer: Panoptes rv');

      const again = await k(['apply', '-f', manifest('cm.yaml', configMap('green'))]);
      t.equal(again.code, 0, again.stderr);
      t.same((await getJson(['configmap', 'settings']) as { data?: unknown }).data, { color: 'green' }, 'the second apply, read at once');
      t.equal(memberCm().data.color, 'green', 'written in the member');
    });

    await t.test('kubectl apply --dry-run=server answers what would be, and changes nothing', async (t) => {
      const r = await k(['apply', '--dry-run=server', '-f', manifest('dry.yaml', configMap('never')), '-o', 'json']);
      t.equal(r.code, 0, r.stderr);
      t.same((JSON.parse(r.stdout) as { data?: unknown }).data, { color: 'never' }, "the member's dry-run answer, not the stored object");
      t.same((await getJson(['configmap', 'settings']) as { data?: unknown }).data, { color: 'green' });
      t.equal(memberCm().data.color, 'green');
    });

    await t.test('kubectl apply --server-side, then get', async (t) => {
      const r = await k(['apply', '--server-side', '--force-conflicts', '-f', manifest('cm.yaml', configMap('red'))]);
      t.equal(r.code, 0, r.stderr);
      t.same((await getJson(['configmap', 'settings']) as { data?: unknown }).data, { color: 'red' });
    });

    await t.test('kubectl edit through EDITOR', async (t) => {
      const editor = join(dir, 'editor.sh');
      writeFileSync(editor, `#!/bin/sh\nsed -i 's/color: .*/color: purple/' "$1"\n`);
      chmodSync(editor, 0o755);
      const r = await k(['edit', 'configmap', 'settings'], { EDITOR: editor, KUBE_EDITOR: editor });
      t.equal(r.code, 0, r.stderr);
      t.match(r.stdout, /configmap\/settings edited/);
      t.same((await getJson(['configmap', 'settings']) as { data?: unknown }).data, { color: 'purple' });
      t.equal(memberCm().data.color, 'purple');
    });

    await t.test('a PUT with a stale Panoptes resourceVersion is a 409; with the current one it goes through', async (t) => {
      const before = await getJson(['configmap', 'settings']);
      const staleFile = manifest('stale.json', { ...before, data: { color: 'stale' } });
      const moved = await k(['apply', '-f', manifest('cm.yaml', configMap('orange'))]);
      t.equal(moved.code, 0, moved.stderr);
      const stale = await k(['replace', '-f', staleFile]);
      t.not(stale.code, 0);
      t.match(stale.stderr, /Operation cannot be fulfilled on configmaps "settings": the object has been modified; please apply your changes to the latest version and try again/);
      t.equal(memberCm().data.color, 'orange', 'the member was not written');

      const current = await getJson(['configmap', 'settings']);
      t.not(current.metadata?.resourceVersion, memberCm().metadata?.resourceVersion, "Panoptes' rv is not the member's here");
      t.equal(current.metadata?.annotations?.['panoptes.io/cluster'], 'east', "the body got through Panoptes carries Panoptes' stamps");
      const ok = await k(['replace', '-f', manifest('fresh.json', { ...current, data: { color: 'teal' } })]);
      t.equal(ok.code, 0, ok.stderr);
      t.equal(memberCm().data.color, 'teal');
      t.same(Object.keys(memberCm().metadata?.annotations ?? {}).filter((a) => a.startsWith('panoptes.io/')), [], 'and none of them reaches the member');
      t.same((await getJson(['configmap', 'settings']) as { data?: unknown }).data, { color: 'teal' });
    });

    await t.test('kubectl label --resource-version: the current Panoptes rv is translated, a stale one is a 409', async (t) => {
      const current = (await getJson(['configmap', 'settings'])).metadata!.resourceVersion!;
      const ok = await k(['label', 'configmap', 'settings', 'tier=front', `--resource-version=${current}`]);
      t.equal(ok.code, 0, ok.stderr);
      t.equal(memberCm().metadata?.labels?.tier, 'front');
      const stale = await k(['label', 'configmap', 'settings', 'tier=back', '--overwrite', `--resource-version=${current}`]);
      t.not(stale.code, 0, 'the object moved on since that version');
      t.match(stale.stderr, /the object has been modified/);
      t.equal(memberCm().metadata?.labels?.tier, 'front');
    });

    await t.test('kubectl scale, then a watch through Panoptes sees it', async (t) => {
      const created = await k(['apply', '-f', manifest('deploy.yaml', deployment)]);
      t.equal(created.code, 0, created.stderr);
      const watch = spawn('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', cache, 'get', 'deployment', 'web', '-w', '-o', 'jsonpath={.spec.replicas}{"\\n"}'], { stdio: ['ignore', 'pipe', 'pipe'] });
      const lines: string[] = [];
      let stderr = '';
      watch.stdout.setEncoding('utf8').on('data', (d: string) => lines.push(...d.split('\n').filter((l) => l.trim())));
      watch.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      t.teardown(() => watch.kill('SIGKILL'));
      await waitUntil('the watch lists the deployment', () => lines.length > 0, 20_000).catch((err: Error) => t.fail(`${err.message}: ${stderr}`));
      t.equal(lines[0], '1');

      const scaled = await k(['scale', 'deployment', 'web', '--replicas=3']);
      t.equal(scaled.code, 0, scaled.stderr);
      const r = await k(['get', 'deployment', 'web', '-o', 'jsonpath={.spec.replicas}']);
      t.equal(r.stdout, '3', 'a get right after the scale shows it');
      await waitUntil('the watch sees replicas 3', () => lines.includes('3'), 20_000).catch((err: Error) => t.fail(`${err.message}: ${lines.join(',')} ${stderr}`));
      t.ok(lines.includes('3'), 'the watch through Panoptes saw the scale');
    });

    await t.test('kubectl delete, then get is NotFound', async (t) => {
      const r = await k(['delete', 'configmap', 'settings']);
      t.equal(r.code, 0, r.stderr);
      const got = await k(['get', 'configmap', 'settings']);
      t.not(got.code, 0);
      t.match(got.stderr, /NotFound|not found/);
    });
  });
}

t.test('a write whose sync does not come in time: the member object, and kubectl shows the Warning', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-proxy-rv-e2e-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const lone = await startSimCluster({ name: 'lone', controllers: false });
  t.teardown(() => lone.close());
  lone.crud.create(lone.registry.lookup('', 'v1', 'namespaces')!, 'v1', undefined, { metadata: { name: 'shop' } }, {});
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  // Registered and Ready, its configmaps synced as far as the catalog knows, but no synchro: nothing is ever stored.
  await seedCluster(store, 'lone', { phase: 'Ready', ready: true, apiResources: [{ group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true, singularName: 'configmap' }] });
  const credentials: MemberCredentials = { lookup: async (name) => (name === 'lone' ? { connection: { server: lone.url }, fingerprint: lone.url } : undefined) };
  const api = await createApiserver({ store, catalogOptions: { refreshMs: 200 }, limits: { proxyWriteWaitMs: 300 }, log: logger('test'), proxy: { credentials, unauthenticatedUser: { name: 'dev', groups: ['system:authenticated'], extra: {} } } });
  t.teardown(() => api.close());
  const base = await api.listen('127.0.0.1', 0);
  await waitUntil('lone in the catalog', () => api.deps.catalog.view('lone')?.find('', 'v1', 'configmaps') !== undefined, 30_000);

  // kubectl apply sends JSON (kubectl create <kind> sends protobuf, which the simulated member does not read).
  const file = join(dir, 'late.yaml');
  writeFileSync(file, stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'late', namespace: 'shop' }, data: { k: 'v' } }));
  const started = Date.now();
  const r = await kubectl(writeViewKubeconfig(dir, base, 'lone'), join(dir, 'cache'), ['apply', '-f', file, '-o', 'json']);
  t.equal(r.code, 0, r.stderr);
  t.ok(Date.now() - started >= 300, 'waited --proxy-write-wait');
  t.match(r.stderr, /Warning: create of configmaps "late" in cluster lone is not synced by Panoptes yet after 0\.3s: this is the member's answer, with the member's resourceVersion/);
  const answer = JSON.parse(r.stdout) as KubeObject;
  t.equal(answer.metadata?.resourceVersion, (lone.crud.get(lone.registry.lookup('', 'v1', 'configmaps')!, 'shop', 'late') as KubeObject).metadata?.resourceVersion, "the member's object");
  t.equal(answer.metadata?.annotations?.['panoptes.io/cluster'], undefined);
});
