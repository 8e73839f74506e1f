// Panoptes as installed, on one machine: PostgreSQL, simulated member clusters, synchro and
// two apiserver replicas serving TLS with authentication and authorization, the way they
// run behind kube-apiserver. A fake HOST cluster API (hack/testing/fakehost.ts) stands in
// for kube-apiserver's TokenReview, SubjectAccessReview and extension-apiserver-authentication.
//
//   node --import tsx hack/local-up.ts [--dir ./data/local-up] [--clusters east,west] [--check]
//
// Writes certificates (hack/certs.ts), clusters.yaml, the host kubeconfig and two user
// kubeconfigs to DIR, prints kubectl commands, runs until Ctrl-C. --check: wait until both
// replicas serve, make a few authenticated requests, stop (exit 0 when all behaved).
//
// Users of the fake host: client certificate `admin` (CN panoptes-admin, O system:masters:
// always allowed), bearer token `dev-token` (user dev: may read everything except the
// last cluster, to show per-cluster authorization), and the front proxy (front-proxy-client
// certificate + X-Remote-User) as kube-apiserver would send it.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { authenticationConfigMap, startFakeHost } from './testing/fakehost.ts';
import { startSimClusters } from './sim/cluster.ts';
import { makeCertSet, writeCertSet } from './certs.ts';
import { createDatabase, freePort, startPostgres } from '../storage/testing/postgres.ts';

const { values } = parseArgs({ options: { dir: { type: 'string' }, clusters: { type: 'string' }, check: { type: 'boolean' } }, strict: true });
const dir = resolve(values.dir ?? './data/local-up');
const names = (values.clusters ?? 'east,west').split(',').filter(Boolean);
const certDir = join(dir, 'certs');
mkdirSync(dir, { recursive: true });

const say = (s: string) => process.stdout.write(`${s}\n`);
const b64 = (s: string) => Buffer.from(s).toString('base64');
const procs: ChildProcess[] = [];
const cleanups: (() => Promise<void> | void)[] = [];

async function shutdown(code: number): Promise<never> {
  for (const p of procs) if (p.exitCode === null) p.kill('SIGTERM');
  await Promise.all(procs.map((p) => (p.exitCode !== null ? undefined : new Promise((r) => p.once('exit', r)))));
  for (const c of cleanups.reverse()) await c();
  process.exit(code);
}

function panoptes(name: string, args: string[]): ChildProcess {
  const p = spawn(process.execPath, ['bin/panoptes.mjs', ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, PANOPTES_LOG_LEVEL: process.env.PANOPTES_LOG_LEVEL ?? 'warn' } });
  p.stderr?.on('data', (d: Buffer) => process.stderr.write(d.toString().replace(/^/gm, `[${name}] `)));
  p.on('exit', (code) => {
    if (code !== 0 && code !== null) say(`${name} exited with ${code}`);
  });
  procs.push(p);
  return p;
}

function call(url: string, o: { ca: string; cert?: string; key?: string; headers?: Record<string, string> }): Promise<{ status: number; body: string }> {
  return new Promise((resolveCall, reject) => {
    const req = request(url, { ca: o.ca, cert: o.cert, key: o.key, headers: o.headers, agent: false, timeout: 5000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolveCall({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

function kubeconfig(server: string, ca: string, user: Record<string, string>): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster: { server, 'certificate-authority-data': b64(ca) } }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'c',
  }, null, 2);
}

process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));

try {
  const certs = makeCertSet();
  writeCertSet(certDir, certs);
  say(`certificates: ${certDir}`);

  const pgServer = await startPostgres();
  cleanups.push(() => pgServer.stop());
  const storage = await createDatabase(pgServer.url, 'panoptes');
  say(`PostgreSQL: ${storage}`);

  const sims = await startSimClusters(names, { workload: true });
  cleanups.push(() => Promise.all(sims.map((c) => c.close())).then(() => undefined));
  const clustersFile = join(dir, 'clusters.yaml');
  writeFileSync(clustersFile, JSON.stringify({ clusters: sims.map((c) => ({ name: c.name, server: c.url })) }, null, 2));
  say(`member clusters (simulated): ${sims.map((c) => `${c.name} ${c.url}`).join(', ')}`);

  const denied = names[names.length - 1];
  const host = await startFakeHost({
    configMap: authenticationConfigMap(certs),
    tokens: { 'dev-token': { name: 'dev', groups: ['devs'], extra: {} } },
    policy: (s) => {
      if (s.nonResourceAttributes) return true; // discovery for everyone authenticated
      const a = s.resourceAttributes!;
      if (a.resource === 'secrets') return 'secrets are not readable in local-up';
      if (s.user === 'dev' && a.group === 'panoptes.io' && a.resource === 'clusters' && a.subresource === 'resources' && a.name !== undefined && a.name === denied) return `dev may not read cluster ${denied}`;
      if (s.user === 'dev' && a.group === 'panoptes.io' && a.resource === 'clusters' && a.subresource === 'resources' && a.name === undefined) return 'dev may read single clusters only';
      return true;
    },
  });
  cleanups.push(() => host.close());
  const hostKubeconfig = join(dir, 'host.kubeconfig');
  writeFileSync(hostKubeconfig, kubeconfig(host.url, host.ca, { token: host.saToken }));
  say(`host cluster API (fake): ${host.url}`);

  panoptes('synchro', ['synchro', '--storage', storage, '--clusters', clustersFile, '--metrics-listen', `127.0.0.1:${await freePort()}`]);
  const ports = [await freePort(), await freePort()];
  for (const [i, port] of ports.entries()) {
    panoptes(`apiserver-${i + 1}`, [
      'apiserver', '--storage', storage, '--bind-address', '127.0.0.1', '--secure-port', String(port),
      '--tls-cert-file', join(certDir, 'serving.crt'), '--tls-private-key-file', join(certDir, 'serving.key'),
      '--authentication-kubeconfig', hostKubeconfig, '--authorization-kubeconfig', hostKubeconfig,
    ]);
  }
  const bases = ports.map((p) => `https://127.0.0.1:${p}`);
  const ca = readFileSync(join(certDir, 'serving-ca.crt'), 'utf8');
  const adminKc = join(dir, 'admin.kubeconfig');
  const devKc = join(dir, 'dev.kubeconfig');
  writeFileSync(adminKc, kubeconfig(`${bases[0]}/apis/panoptes.io/v1alpha1/resources`, ca, { 'client-certificate-data': b64(certs.admin.cert), 'client-key-data': b64(certs.admin.key) }));
  writeFileSync(devKc, kubeconfig(`${bases[1]}/apis/panoptes.io/v1alpha1/resources/clusters/${names[0]}`, ca, { token: 'dev-token' }));

  // Both replicas ready (bounded).
  const deadline = Date.now() + 60_000;
  for (const base of bases) {
    for (;;) {
      const r = await call(`${base}/readyz`, { ca }).catch(() => ({ status: 0, body: '' }));
      if (r.status === 200) break;
      if (Date.now() > deadline) throw new Error(`${base} not ready within 60 s`);
      await new Promise((r2) => setTimeout(r2, 500));
    }
  }
  say(`apiservers: ${bases.join(', ')} (TLS, authn/authz by the fake host)`);
  say(`
Try:
  kubectl --kubeconfig ${adminKc} --cache-dir ${dir}/kcache get pods -A            # admin (system:masters), all clusters
  kubectl --kubeconfig ${devKc} --cache-dir ${dir}/kcache get deployments -A       # dev, cluster ${names[0]} only
  curl --cacert ${certDir}/serving-ca.crt --cert ${certDir}/front-proxy-client.crt --key ${certDir}/front-proxy-client.key \\
       -H 'X-Remote-User: alice' ${bases[1]}/apis/panoptes.io/v1alpha1/clusters     # as kube-apiserver proxies
  curl --cacert ${certDir}/serving-ca.crt -H 'X-Remote-User: alice' ${bases[1]}/apis/panoptes.io/v1alpha1/clusters   # 401
Ctrl-C stops everything.`);

  if (values.check) {
    // Wait (bounded) until synchro has synced pods, so the checks see data.
    const podsUrl = `${bases[0]}/apis/panoptes.io/v1alpha1/resources/api/v1/pods?limit=1`;
    const until = Date.now() + 60_000;
    while ((await call(podsUrl, { ca, cert: certs.admin.cert, key: certs.admin.key }).catch(() => ({ status: 0 }))).status !== 200 && Date.now() < until) await new Promise((r) => setTimeout(r, 500));
    const front = { ca, cert: certs.frontProxyClient.cert, key: certs.frontProxyClient.key };
    const checks: [string, Promise<{ status: number }>, number][] = [
      ['admin lists pods (all clusters)', call(`${bases[0]}/apis/panoptes.io/v1alpha1/resources/api/v1/pods?limit=1`, { ca, cert: certs.admin.cert, key: certs.admin.key }), 200],
      ['dev reads its cluster', call(`${bases[1]}/apis/panoptes.io/v1alpha1/resources/clusters/${names[0]}/api/v1/namespaces`, { ca, headers: { Authorization: 'Bearer dev-token' } }), 200],
      ['dev denied the other cluster', call(`${bases[1]}/apis/panoptes.io/v1alpha1/resources/clusters/${denied}/api/v1/namespaces`, { ca, headers: { Authorization: 'Bearer dev-token' } }), 403],
      ['front proxy + X-Remote-User', call(`${bases[1]}/apis/panoptes.io/v1alpha1/clusters`, { ...front, headers: { 'X-Remote-User': 'alice' } }), 200],
      ['headers without the front-proxy certificate', call(`${bases[0]}/apis/panoptes.io/v1alpha1/clusters`, { ca, headers: { 'X-Remote-User': 'alice' } }), 401],
      ['secrets denied', call(`${bases[0]}/apis/panoptes.io/v1alpha1/resources/api/v1/secrets`, { ...front, headers: { 'X-Remote-User': 'alice' } }), 403],
    ];
    let failed = 0;
    for (const [name, p, want] of checks) {
      const got = (await p).status;
      say(`${got === want ? 'ok  ' : 'FAIL'} ${name}: ${got} (want ${want})`);
      if (got !== want) failed++;
    }
    await shutdown(failed ? 1 : 0);
  }
} catch (err) {
  process.stderr.write(`local-up: ${(err as Error).stack ?? String(err)}\n`);
  await shutdown(1);
}
