// End to end: registering member clusters with the real kubectl. `panoptes all-in-one` (a
// process, SQLite) over simulated clusters, a simulated host cluster holding a Secret:
// `kubectl apply` a Cluster and its Secret → its objects become listable; `get clusters -w`
// shows it go Ready; `patch` and `edit` its resources → synchro follows; a stale replace gets
// 409, bad specs 422 with causes, server-side apply 415, a server dry-run writes nothing, a
// clusters.yaml cluster refuses changes; `delete` → its objects vanish from lists and watchers
// get DELETED; no answer of any verb or format, and no row of the change log, carries the
// credentials. Then on PostgreSQL: a synchro process and two apiservers, a Cluster created
// through one is synced and seen through the other.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import { writeKubeconfig } from '../../../cli/commands/kubeconfig.ts';
import { freePort } from '../../../storage/testing/postgres.ts';
import { startSimCluster, type SimCluster } from '../../../hack/sim/cluster.ts';
import { get } from '../../../hack/sim/testutil.ts';
import { httpWatch } from '../../../hack/testing/watch-http.ts';
import { Store } from '../../../storage/store.ts';
import { emptyStorageUrl, stopTestPostgres } from '../../../storage/testing.ts';

const bin = new URL('../../../bin/panoptes.mjs', import.meta.url).pathname;
const P = '/apis/panoptes.io/v1alpha1/resources';
const C = '/apis/panoptes.io/v1alpha1/clusters';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';
const SECRET_TOKEN = 'east-token-e2e-SECRET';
const INLINE_TOKEN = 'lab-token-e2e-SECRET';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}

function spawnPanoptes(t: Test, args: string[], env: NodeJS.ProcessEnv = {}): { proc: ChildProcess; stderr: () => string } {
  const proc = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-20_000)));
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  });
  return { proc, stderr: () => stderr };
}

function kubectlRunner(kubeconfig: string, cacheDir: string, env: NodeJS.ProcessEnv = {}) {
  const outputs: string[] = [];
  const run = (args: string[], timeoutMs = 60_000): Promise<Run> =>
    new Promise((resolve) => {
      execFile('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', cacheDir, ...args], { timeout: timeoutMs, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
        outputs.push(stdout, stderr);
        resolve({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, stdout, stderr });
      });
    });
  const stream = (args: string[]) => {
    const p = spawn('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', cacheDir, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: string[] = [];
    let buf = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => {
      buf += d;
      const parts = buf.split('\n');
      buf = parts.pop() ?? '';
      lines.push(...parts.filter((l) => l.trim()));
    });
    let stderr = '';
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    return { lines, stderr: () => stderr, kill: () => p.kill('SIGKILL'), exited: new Promise<void>((r) => p.on('exit', () => r())) };
  };
  return { run, stream, outputs };
}

t.test('registering clusters with kubectl: all-in-one, SQLite', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-clusters-e2e-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const east = await startSimCluster({ name: 'east', workload: true });
  const lab = await startSimCluster({ name: 'lab' });
  const filed = await startSimCluster({ name: 'filed' });
  const host = await startSimCluster({ name: 'host' });
  t.teardown(() => Promise.all([east, lab, filed, host].map((s) => s.close())));
  east.auth.tokens = [SECRET_TOKEN];
  lab.auth.tokens = [INLINE_TOKEN];

  const hostKubeconfig = join(dir, 'host.kubeconfig');
  await writeKubeconfig(hostKubeconfig, { sims: [{ name: 'host', url: host.url }] });
  const clustersFile = join(dir, 'clusters.yaml');
  writeFileSync(clustersFile, stringify({ clusters: [{ name: 'filed', server: filed.url, resources: ['configmaps'] }] }));
  const { url: storage, cleanup } = await emptyStorageUrl('sqlite');
  t.teardown(cleanup);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const aio = spawnPanoptes(t, ['all-in-one', '--storage', storage, '--clusters', clustersFile, '--host-kubeconfig', hostKubeconfig, '--credentials-namespace', 'panoptes', '--insecure-listen', `127.0.0.1:${port}`, '--probe-interval', '500ms', '--log-level', 'warn', '--allow-member-networks', '127.0.0.0/8']);
  await until('all-in-one serving the file cluster', async () => (await get(`${base}${C}/filed`)).json?.status?.ready === true, 60_000).catch((err: Error) => {
    throw new Error(`${err.message}; stderr: ${aio.stderr()}`);
  });

  const kubeconfig = join(dir, 'kubeconfig');
  await writeKubeconfig(kubeconfig, { panoptes: { server: base, clusters: [] }, sims: [{ name: 'host', url: host.url }] });
  const answers: string[] = [];
  const k = kubectlRunner(kubeconfig, join(dir, 'cache'));
  const root = (args: string[]) => k.run(['--server', base, ...args]);

  const watchClusters = k.stream(['--server', base, 'get', 'clusters', '-w']);
  t.teardown(() => watchClusters.kill());

  // The Secret in the host cluster (Panoptes' namespace), labelled for its cluster, and the Cluster naming it.
  const files = {
    secret: join(dir, 'secret.yaml'),
    east: join(dir, 'east.yaml'),
    lab: join(dir, 'lab.yaml'),
    bad: join(dir, 'bad.yaml'),
  };
  writeFileSync(files.secret, stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'panoptes' } }) + '---\n' + stringify({
    apiVersion: 'v1', kind: 'Secret', metadata: { name: 'east-credentials', namespace: 'panoptes', labels: { 'panoptes.io/cluster': 'east' }, annotations: { 'panoptes.io/server': east.url } }, type: 'Opaque', stringData: { token: SECRET_TOKEN },
  }));
  const eastManifest = { apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'east', labels: { env: 'prod' } }, spec: { server: east.url, resources: ['configmaps', 'apps/deployments'], credentials: { secretRef: { name: 'east-credentials' } } } };
  writeFileSync(files.east, stringify(eastManifest));
  writeFileSync(files.lab, stringify({ apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'lab' }, spec: { server: lab.url, resources: ['configmaps'], credentials: { token: INLINE_TOKEN } } }));
  writeFileSync(files.bad, stringify({ apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'bad' }, spec: { server: 'not a url', resources: ['a/b/c'], namespaces: { include: ['Nope'] } } }));

  await t.test('kubectl apply: the Cluster and its Secret; its objects become listable; get -w shows it Ready', async (t) => {
    const s = await k.run(['--context', 'sim-host', 'apply', '-f', files.secret]);
    t.equal(s.code, 0, s.stderr);
    const a = await root(['apply', '-f', files.east]);
    t.equal(a.code, 0, a.stderr);
    t.match(a.stdout, /cluster.panoptes.io\/east created/);
    const l = await k.run(['--context', 'panoptes', 'apply', '-f', files.lab]);
    t.equal(l.code, 0, `through the kubeconfig's all-clusters context: ${l.stderr}`);
    await until('east Ready in get clusters -w', async () => watchClusters.lines.some((x) => /^east\s+Ready\s+True\s+2\/2\s/.test(x)), 30_000).catch((err: Error) => {
      throw new Error(`${err.message}: ${watchClusters.lines.join('\n')} ${watchClusters.stderr()}`);
    });
    t.match(watchClusters.lines[0], /^NAME\s+PHASE\s+READY\s+SYNCED\s+OBJECTS\s+AGE$/);
    t.ok(watchClusters.lines.some((x) => /^east\s+Pending\s+False/.test(x)), 'seen Pending first');
    const cms = await until('east configmaps listable', async () => {
      const r = await k.run(['--context', 'panoptes', 'get', 'configmaps', '-A', '-l', 'search.panoptes.io/clusters=east', '-o', 'name']);
      const n = r.stdout.trim().split('\n').filter(Boolean).length;
      return n === east.store.list('/configmaps').items.length ? r : undefined;
    });
    t.ok(cms.stdout.includes('configmap/'), 'listed through Panoptes');
    await until('lab Ready', async () => (await get(`${base}${C}/lab`)).json?.status?.ready === true);
    t.ok(lab.auth.seen.includes(INLINE_TOKEN) && east.auth.seen.includes(SECRET_TOKEN), 'each used its credentials');
    const unchanged = await root(['apply', '-f', files.east]);
    t.match(unchanged.stdout, /cluster.panoptes.io\/east unchanged/, 'applying the same manifest again changes nothing');

    const wide = await root(['get', 'clusters', '-o', 'wide']);
    t.match(wide.stdout.split('\n')[0], /^NAME\s+PHASE\s+READY\s+SYNCED\s+OBJECTS\s+AGE\s+SERVER\s+OWNER\s+EPOCH\s+MCS\s+INSTALLATION\s+MESSAGE$/);
    t.match(wide.stdout, /\neast\s.*\s\d+\s+none\s+[0-9a-f]{12}\s/, 'an API-registered cluster: no multi-cluster Service role unless granted; the installation syncing it');
    const roles = await root(['explain', 'clusters.spec.multiClusterServices']);
    t.match(roles.stdout, /provider\s+<boolean>/, 'kubectl explain describes the roles');
    t.match(roles.stdout, /clusters\/multiclusterservices/);
    t.match(wide.stdout, new RegExp(`east\\s+Ready\\s+True\\s+2/2\\s+\\d+\\s+\\S+\\s+${east.url.replace(/[.]/g, '\\.')}/`));
    const explain = await root(['explain', 'clusters.spec.credentials']);
    t.match(explain.stdout, /secretRef\s+<ClusterSecretRef>/, 'kubectl explain describes the spec');
    t.match(explain.stdout, /Write-only/);
    const yaml = await root(['get', 'cluster', 'east', '-o', 'yaml']);
    t.match(yaml.stdout, /source: api/);
    t.match(yaml.stdout, /secretRef:\n\s+name: east-credentials/);
  });

  await t.test('patch and edit its resources: synchro follows', async (t) => {
    const p = await root(['patch', 'cluster', 'east', '--type', 'merge', '-p', JSON.stringify({ spec: { resources: ['configmaps', 'apps/deployments', 'services'] } })]);
    t.equal(p.code, 0, p.stderr);
    await until('east services listable', async () => {
      const r = await k.run(['--context', 'panoptes', 'get', 'services', '-A', '-l', 'search.panoptes.io/clusters=east', '-o', 'name']);
      return r.stdout.trim().split('\n').filter(Boolean).length === east.store.list('/services').items.length;
    });
    const j = await root(['patch', 'cluster', 'east', '--type', 'json', '-p', '[{"op":"add","path":"/metadata/labels/tier","value":"gold"}]']);
    t.equal(j.code, 0, j.stderr);
    const smp = await root(['patch', 'cluster', 'east', '-p', '{"metadata":{"labels":{"x":"y"}}}']);
    t.not(smp.code, 0, 'kubectl patch defaults to strategic merge patch: 415, as for a custom resource');
    t.match(smp.stderr, /application\/strategic-merge-patch\+json is not supported|unknown format/);

    const editor = join(dir, 'editor.mjs');
    writeFileSync(editor, "import { readFileSync, writeFileSync } from 'node:fs';\nconst f = process.argv[2];\nwriteFileSync(f, readFileSync(f, 'utf8').replace(/^\\s*- services\\n/m, ''));\n");
    chmodSync(editor, 0o755);
    const edited = await kubectlRunner(kubeconfig, join(dir, 'cache'), { KUBE_EDITOR: `${process.execPath} ${editor}` }).run(['--server', base, 'edit', 'cluster', 'east']);
    t.equal(edited.code, 0, edited.stderr);
    t.match(edited.stdout, /cluster.panoptes.io\/east edited/);
    // No cluster syncs services any more: gone from the lists, and the resource is served no more
    // (kubectl, with its cached discovery, then reports it not found).
    let last: Run | undefined;
    await until('east services gone after the edit', async () => {
      const r = (last = await k.run(['--context', 'panoptes', 'get', 'services', '-A', '-l', 'search.panoptes.io/clusters=east', '-o', 'name']));
      return (r.code === 0 && r.stdout.trim() === '') || /doesn't have a resource type "services"|could not find the requested resource/.test(r.stderr);
    }).catch((err: Error) => {
      throw new Error(`${err.message}: ${JSON.stringify(last)}`);
    });
    const o = (await get(`${base}${C}/east`)).json;
    t.same(o.spec.resources, ['configmaps', 'apps/deployments']);
    await until('observedGeneration follows', async () => (await get(`${base}${C}/east`)).json.status?.observedGeneration === o.metadata.generation);
  });

  await t.test('409 for a stale update, 422 with causes, 415 for server-side apply, dry-run, the file cluster refuses', async (t) => {
    const stale = join(dir, 'stale.yaml');
    const cur = JSON.parse((await root(['get', 'cluster', 'east', '-o', 'json'])).stdout);
    writeFileSync(stale, JSON.stringify({ ...cur, metadata: { ...cur.metadata, resourceVersion: '2' } }));
    const r = await root(['replace', '-f', stale]);
    t.not(r.code, 0);
    t.match(r.stderr, /Operation cannot be fulfilled on clusters.panoptes.io "east": the object has been modified; please apply your changes to the latest version and try again/);

    const bad = await root(['apply', '-f', files.bad]);
    t.not(bad.code, 0);
    t.match(bad.stderr, /The Cluster "bad" is invalid/);
    for (const field of ['spec.server', 'spec.resources[0]', 'spec.namespaces.include[0]']) t.ok(bad.stderr.includes(field), `${field} is a cause`);
    const typo = join(dir, 'typo.yaml');
    writeFileSync(typo, stringify({ ...eastManifest, metadata: { name: 'typo' }, spec: { ...eastManifest.spec, resorces: ['pods'] } }));
    const strict = await root(['apply', '-f', typo]);
    t.not(strict.code, 0);
    t.match(strict.stderr, /unknown field "(spec\.)?resorces"/, 'an unknown field is refused');

    const ssa = await root(['apply', '--server-side', '-f', files.east]);
    t.not(ssa.code, 0);
    t.match(ssa.stderr, /unknown format - accepted media types include: application\/json-patch\+json, application\/merge-patch\+json/);
    const before = (await get(`${base}${C}/east`)).json;
    writeFileSync(join(dir, 'dry.yaml'), stringify({ ...eastManifest, spec: { ...eastManifest.spec, resources: ['pods'] } }));
    const dry = await root(['apply', '--dry-run=server', '-f', join(dir, 'dry.yaml')]);
    t.equal(dry.code, 0, dry.stderr);
    t.match(dry.stdout, /configured \(server dry run\)/);
    const after = (await get(`${base}${C}/east`)).json;
    t.same([after.spec, after.metadata.generation], [before.spec, before.metadata.generation], 'nothing written');

    const filedDelete = await root(['delete', 'cluster', 'filed', '--wait=false']);
    t.not(filedDelete.code, 0);
    t.match(filedDelete.stderr, /clusters.panoptes.io "filed" is forbidden: it is defined in the clusters file of synchro \(spec.source: file\)/);
    t.match((await root(['get', 'cluster', 'filed', '-o', 'yaml'])).stdout, /source: file/);
  });

  await t.test('kubectl delete: the objects vanish from lists, watchers get DELETED, then the Cluster', async (t) => {
    const names = east.store.list('/configmaps').items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
    const w = await httpWatch(`${base}${P}/api/v1/configmaps?watch=1&resourceVersion=${(await get(`${base}${C}`)).json.metadata.resourceVersion}`);
    t.teardown(() => w.close());
    const d = await root(['delete', 'cluster', 'east', '--timeout=60s']);
    t.equal(d.code, 0, d.stderr);
    t.match(d.stdout, /cluster.panoptes.io "east" deleted/);
    t.equal((await get(`${base}${C}/east`)).status, 404, 'kubectl waited until the Cluster was gone');
    await w.until((x) => x.events.filter((e) => e.type === 'DELETED' && e.object.metadata.annotations['panoptes.io/cluster'] === 'east').length === names.length, 10_000, 'DELETED for each of east\'s configmaps');
    const lists = await k.run(['--context', 'panoptes', 'get', 'configmaps', '-A', '-l', 'search.panoptes.io/clusters=east', '-o', 'name']);
    t.equal(lists.stdout.trim(), '', 'gone from lists');
    await until('get -w saw it go', async () => watchClusters.lines.some((x) => /^east\s+Terminating/.test(x)));
    answers.push(w.raw());
  });

  await t.test('credentials appear in no answer and no row', async (t) => {
    watchClusters.kill();
    for (const [path, accept] of [
      [`${C}`, 'application/json'],
      [`${C}`, TABLE],
      [`${C}?includeObject=Object`, TABLE],
      [`${C}`, 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io'],
      [`${C}/lab`, 'application/json'],
      [`${C}/lab/status`, 'application/json'],
      [`${C}/lab`, 'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io'],
      [`${C}?watch=1&resourceVersion=0&timeoutSeconds=1`, 'application/json'],
      [`${C}?watch=1&resourceVersion=0&timeoutSeconds=1&includeObject=Object`, TABLE],
      [`${P}/apis/panoptes.io/v1alpha1/clusters?watch=1&resourceVersion=1&timeoutSeconds=1`, 'application/json'],
    ] as const) {
      const r = await get(base + path, { Accept: accept });
      answers.push(r.text);
    }
    const y = await root(['get', 'cluster', 'lab', '-o', 'yaml']);
    t.match(y.stdout, /kubectl.kubernetes.io\/last-applied-configuration/, 'kubectl apply recorded its configuration');
    const store = await Store.open(storage);
    const rows = JSON.stringify([await store.conn.knex('objects').select('object'), await store.conn.knex('changes').select('object', 'prev_object'), await store.conn.knex('clusters').select('spec', 'status')]);
    await store.close();
    for (const secret of [SECRET_TOKEN, INLINE_TOKEN]) {
      t.notOk([...answers, ...k.outputs].some((a) => a.includes(secret)), `no answer carries ${secret}`);
      t.notOk(aio.stderr().includes(secret), `no log line carries ${secret}`);
      t.notOk(rows.includes(secret), `no served row carries ${secret}`);
    }
  });
});

t.test('on PostgreSQL: a Cluster created through one apiserver is synced by synchro and seen through the other', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-clusters-pg-'));
  const member = await startSimCluster({ name: 'pgm', workload: true });
  t.teardown(async () => {
    await member.close();
    rmSync(dir, { recursive: true, force: true });
    await stopTestPostgres();
  });
  const { url } = await emptyStorageUrl('postgres');
  const [p1, p2] = [await freePort(), await freePort()];
  // The simulated member listens on 127.0.0.1: the operator allows it (flag, or its environment variable).
  const synchro = spawnPanoptes(t, ['synchro', '--storage', url, '--identity', 's1', '--probe-interval', '500ms', '--metrics-listen', 'off', '--log-level', 'warn', '--allow-member-networks', '127.0.0.0/8']);
  const a1 = spawnPanoptes(t, ['apiserver', '--storage', url, '--insecure-listen', `127.0.0.1:${p1}`, '--log-level', 'warn'], { PANOPTES_ALLOW_MEMBER_NETWORKS: '127.0.0.0/8' });
  spawnPanoptes(t, ['apiserver', '--storage', url, '--insecure-listen', `127.0.0.1:${p2}`, '--log-level', 'warn', '--allow-member-networks', '127.0.0.0/8']);
  const [one, two] = [`http://127.0.0.1:${p1}`, `http://127.0.0.1:${p2}`];
  await until('both apiservers serving', async () => (await get(`${one}${C}`)).status === 200 && (await get(`${two}${C}`)).status === 200, 60_000).catch((err: Error) => {
    throw new Error(`${err.message}; ${a1.stderr()} ${synchro.stderr()}`);
  });
  const kubeconfig = join(dir, 'kubeconfig');
  await writeKubeconfig(kubeconfig, { panoptes: { server: one, clusters: [] } });
  const k = kubectlRunner(kubeconfig, join(dir, 'cache'));
  const watchTwo = k.stream(['--server', two, 'get', 'clusters', '-w']);
  t.teardown(() => watchTwo.kill());
  const manifest = join(dir, 'pgm.yaml');
  writeFileSync(manifest, stringify({ apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'pgm' }, spec: { server: member.url, resources: ['configmaps'] } }));
  const a = await k.run(['--server', one, 'apply', '-f', manifest]);
  t.equal(a.code, 0, a.stderr);
  await until('pgm Ready in get -w through the other apiserver', async () => watchTwo.lines.some((x) => /^pgm\s+Ready\s+True\s+1\/1/.test(x)), 60_000).catch((err: Error) => {
    throw new Error(`${err.message}: ${watchTwo.lines.join('\n')} ${synchro.stderr()}`);
  });
  const want = member.store.list('/configmaps').items.length;
  await until('its configmaps listed through the other apiserver', async () => (await get(`${two}${P}/clusters/pgm/api/v1/configmaps`)).json?.items?.length === want);
  const del = await k.run(['--server', two, 'delete', 'cluster', 'pgm', '--timeout=60s']);
  t.equal(del.code, 0, `deleted through the other apiserver: ${del.stderr}`);
  t.equal((await get(`${one}${C}/pgm`)).status, 404);
  // Its objects are gone: no configmap of pgm is listed (or, pgm being the only cluster, configmaps are served no more).
  const list = await until('no configmap of pgm', async () => {
    const r = await get(`${one}${P}/api/v1/configmaps`);
    const items = (r.json?.items ?? []) as Array<{ metadata: { annotations: Record<string, string> } }>;
    return (r.status === 404 || (r.status === 200 && !items.some((i) => i.metadata.annotations['panoptes.io/cluster'] === 'pgm'))) && r;
  });
  t.ok(list, 'its objects are gone');
});
