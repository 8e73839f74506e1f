// A planted token and client key, driven through every error path there is — writes of
// every verb under Strict, Warn and Ignore, dry runs, bad credential shapes, kubectl's
// last-applied annotation, bodies that do not parse, a token in a URL, clusters.yaml typos,
// Secrets with a broken kubeconfig or no server annotation, a member that reflects the
// request's Authorization header in its error bodies — with the apiserver and synchro in
// this process logging at debug level: no response body or header, no log line, no stored
// status, Cluster object or change, and no metric carries any of it.
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { stringify } from 'yaml';
import { startSimCluster } from '../hack/sim/cluster.ts';
import { http, type HttpResult } from '../hack/sim/testutil.ts';
import { setLogLevel } from '../lib/log.ts';
import { MemberNetworks } from '../member/networks.ts';
import { openTestStore } from '../storage/testing.ts';
import { startSynchro } from '../synchro/synchro.ts';
import { fastTimings, tempDir, waitUntil } from '../synchro/testutil.ts';
import { createCA, createCert } from './auth/certs.ts';
import { createApiserver } from './server.ts';

const TOKEN = 'planted-TOKEN-3f9a1c7e5b';
const C = '/apis/panoptes.io/v1alpha1/clusters';
const b64 = (s: string) => Buffer.from(s).toString('base64');

t.test('no error path echoes a planted credential', async (t) => {
  const client = createCert(createCA('leak-ca'), { commonName: 'leak', usage: 'client' });
  const KEY = b64(client.key);
  const KEY_LINE = client.key.split('\n')[1]; // a line of the PEM body: any piece of the key would show
  const needles = [TOKEN, b64(TOKEN).replace(/=+$/, ''), encodeURIComponent(TOKEN), KEY.slice(20, 60), KEY_LINE];

  // Every log line of both halves, at debug level: captured (and not printed).
  const logLines: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string | Uint8Array) => (logLines.push(String(chunk)), true)) as typeof process.stderr.write;
  setLogLevel('debug');
  t.teardown(() => {
    process.stderr.write = write;
    setLogLevel('error');
  });

  // A member that reflects what it is sent: every answer is an error carrying the Authorization header.
  const reflector = createServer((req, res) => {
    const auth = req.headers.authorization ?? '';
    if (req.url?.startsWith('/readyz')) {
      res.writeHead(500, { 'Content-Type': 'text/html' });
      return res.end(`<html>bad gateway for ${auth}</html>`);
    }
    res.writeHead(401, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Unauthorized', code: 401, message: `token ${auth} rejected` }));
  });
  await new Promise<void>((r) => reflector.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => reflector.close(() => r())));
  const reflectorUrl = `http://127.0.0.1:${(reflector.address() as AddressInfo).port}`;

  const host = await startSimCluster({ name: 'host' });
  const member = await startSimCluster({ name: 'member' });
  t.teardown(async () => {
    await host.close();
    await member.close();
  });
  const { dir, cleanup } = tempDir();
  t.teardown(cleanup);
  const file = `${dir}/clusters.yaml`;
  const { store, close } = await openTestStore('sqlite');
  const memberNetworks = MemberNetworks.parse('127.0.0.0/8');
  const api = await createApiserver({ store, catalogOptions: { refreshMs: 200 }, memberNetworks });
  const base = await api.listen('127.0.0.1', 0);
  // clusters.yaml: mistyped credential keys, and a file cluster whose member reflects its token.
  const yaml = stringify({
    clusters: [
      { name: 'typo-token', server: 'https://10.0.0.1:6443', tokn: TOKEN },
      { name: 'typo-key', server: 'https://10.0.0.2:6443', clientCertificateData: b64(client.cert), clientKeyDat: KEY },
      { name: 'typo-nested', server: 'https://10.0.0.3:6443', namespaces: { include: ['a'], token: TOKEN } },
      { name: 'typo-type', server: { token: TOKEN } },
      { name: 'file-reflected', server: reflectorUrl, token: TOKEN },
    ],
  });
  writeFileSync(file, yaml);
  const synchro = await startSynchro({
    store,
    memberNetworks,
    clustersFile: file,
    hostCluster: { server: host.url },
    credentialsNamespace: 'panoptes',
    timings: fastTimings,
    reloadIntervalMs: 100,
    shards: { identity: 'leaks', assignIntervalMs: 200 },
    compaction: false,
  });
  t.teardown(async () => {
    await synchro.stop();
    await api.close();
    await close();
  });

  const answers: HttpResult[] = [];
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const r = await http(method, base + path, body, headers);
    answers.push(r);
    return r;
  };
  const MERGE = { 'Content-Type': 'application/merge-patch+json' };
  const JSONPATCH = { 'Content-Type': 'application/json-patch+json' };
  const YAML = { 'Content-Type': 'application/yaml' };
  const lastApplied = (spec: Record<string, unknown>) => JSON.stringify({ apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'east' }, spec });

  // The Secrets of the host: a broken kubeconfig carrying the token, and a token without a server annotation.
  await http('POST', `${host.url}/api/v1/namespaces`, { metadata: { name: 'panoptes' } });
  const secret = (name: string, data: Record<string, string>, annotations: Record<string, string> = { 'panoptes.io/server': '*' }) =>
    http('POST', `${host.url}/api/v1/namespaces/panoptes/secrets`, { metadata: { name, namespace: 'panoptes', labels: { 'panoptes.io/cluster': name }, annotations }, data });
  await secret('bad-kubeconfig', { kubeconfig: b64(`users:\n- name: u\n  user:\n    token: ${TOKEN}\n    client-key-data: ${KEY}\n  bad: [unclosed\n`) });
  await secret('unannotated', { token: b64(TOKEN) }, {});
  await secret('exec-kubeconfig', { kubeconfig: b64(stringify({ 'current-context': 'c', contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }], clusters: [{ name: 'k', cluster: {} }], users: [{ name: 'u', user: { token: TOKEN, exec: { command: TOKEN } } }] })) });

  const east = { apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'east' }, spec: { server: 'https://east.example:6443', credentials: { token: TOKEN } } };
  for (const fv of ['Strict', 'Warn', 'Ignore']) {
    for (const dry of ['', '&dryRun=All']) {
      const q = `?fieldValidation=${fv}${dry}`;
      await call('POST', C + q, { ...east, metadata: { name: `typo-${fv.toLowerCase()}` }, spec: { ...east.spec, tokn: TOKEN, credentials: { token: TOKEN, clientKeyDat: KEY } } });
      await call('POST', C + q, { ...east, metadata: { name: 'str' }, spec: { server: 'https://s.example', credentials: TOKEN } });
      await call('POST', C + q, { ...east, metadata: { name: 'num' }, spec: { server: 'https://s.example', credentials: { token: 1234567 } } });
      await call('POST', C + q, { ...east, metadata: { name: 'ws' }, spec: { server: 'https://s.example', credentials: { token: `${TOKEN} x` } } });
      await call('POST', C + q, { ...east, metadata: { name: 'both' }, spec: { server: 'https://s.example', credentials: { secretRef: { name: 's' }, token: TOKEN } } });
      await call('POST', C + q, { ...east, metadata: { name: 'badkey' }, spec: { server: 'https://s.example', credentials: { clientCertData: b64(client.cert), clientKeyData: TOKEN } } });
      await call('POST', C + q, { ...east, metadata: { name: 'rawkey' }, spec: { server: 'https://s.example', credentials: { clientCertData: b64(client.cert), clientKeyData: client.key } } });
      await call('POST', C + q, { ...east, metadata: { name: 'fileonly' }, spec: { server: 'https://s.example', token: TOKEN, clientKeyData: KEY } });
      await call('POST', C + q, { ...east, metadata: { name: 'meta', labels: { bad: `${TOKEN}!` }, annotations: { note: TOKEN } } });
      await call('POST', C + q, { ...east, metadata: { name: 'userinfo' }, spec: { server: `https://admin:${TOKEN}@s.example` } });
      await call('POST', C + q, { ...east, metadata: { name: 'loop' }, spec: { server: 'https://169.254.169.254', credentials: { token: TOKEN } } });
      await call('POST', C + q, { ...east, metadata: { name: 'clear' }, spec: { server: 'http://s.example', credentials: { token: TOKEN } } });
      await call('POST', C + q, { ...east, metadata: { ...east.metadata, annotations: { 'kubectl.kubernetes.io/last-applied-configuration': lastApplied({ ...east.spec, tokn: TOKEN }) } }, spec: { ...east.spec, tokn: TOKEN } });
    }
  }
  t.match((await call('POST', C, east)).status, /^(201|409)$/, 'east exists (Ignore above created it)');
  for (const fv of ['Strict', 'Warn', 'Ignore']) {
    const q = `?fieldValidation=${fv}`;
    await call('PATCH', `${C}/east${q}`, { metadata: { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': lastApplied({ ...east.spec, resorces: ['x'] }) } }, spec: { resorces: ['x'], credentials: { token: TOKEN } } }, MERGE);
    await call('PATCH', `${C}/east${q}&dryRun=All`, { spec: { tokn: TOKEN, credentials: { token: TOKEN, clientKeyData: KEY } } }, MERGE);
    await call('PATCH', `${C}/east${q}`, [{ op: 'add', path: '/spec/credentials/tokn', value: TOKEN }], JSONPATCH);
    await call('PATCH', `${C}/east${q}`, [{ op: 'test', path: '/spec/credentials/token', value: TOKEN }], JSONPATCH);
    await call('PATCH', `${C}/east${q}`, [{ op: 'replace', path: `/spec/${TOKEN}`, value: TOKEN }], JSONPATCH);
    await call('PATCH', `${C}/east${q}`, { spec: { server: 'https://evil.example' } }, MERGE);
    const cur = (await call('GET', `${C}/east`)).json;
    await call('PUT', `${C}/east${q}`, { ...cur, spec: { ...cur.spec, server: 'https://evil.example', tokn: TOKEN, credentials: TOKEN } });
    await call('PUT', `${C}/east${q}`, { ...cur, metadata: { ...cur.metadata, resourceVersion: '1' }, spec: { ...cur.spec, credentials: { token: TOKEN } } });
  }
  // Bodies that do not parse, a token in the URL, a DELETE body.
  await call('POST', C, `{"metadata":{"name":"x"},"spec":{"credentials":{"token":${TOKEN}}}}`, { 'Content-Type': 'application/json' });
  await call('POST', C, `{"spec":{"credentials":{"token":"${TOKEN}"}} trailing`, { 'Content-Type': 'application/json' });
  await call('POST', C, `spec:\n  credentials:\n    token: ${TOKEN}\n  bad: [unclosed\n`, YAML);
  await call('POST', C, `spec: {credentials: {token: "${TOKEN}}}`, YAML);
  await call('PATCH', `${C}/east`, `{"spec":{"credentials":{"token":${TOKEN}}}}`, MERGE);
  await call('PATCH', `${C}/east`, `[{"op":"add","path":"/spec/credentials/token","value":${TOKEN}}]`, JSONPATCH);
  await call('DELETE', `${C}/nope`, `{"preconditions":${TOKEN}}`, { 'Content-Type': 'application/json' });
  await call('GET', `${C}?token=${TOKEN}&access_token=${TOKEN}`);
  await call('GET', `/apis/panoptes.io/v1alpha1/resources/api/v1/pods?labelSelector=${TOKEN}!!`);
  await call('GET', `/apis/panoptes.io/v1alpha1/resources/api/v1/pods?fieldSelector=${TOKEN}`);

  // API clusters synchro runs: a member reflecting its inline token, Secrets that cannot be used.
  await call('POST', C, { metadata: { name: 'api-reflected' }, spec: { server: reflectorUrl, resources: ['configmaps'], credentials: { token: TOKEN } } });
  await call('POST', C, { metadata: { name: 'bad-kubeconfig' }, spec: { server: member.url, credentials: { secretRef: { name: 'bad-kubeconfig' } } } });
  await call('POST', C, { metadata: { name: 'unannotated' }, spec: { server: member.url, credentials: { secretRef: { name: 'unannotated' } } } });
  await call('POST', C, { metadata: { name: 'exec-kubeconfig' }, spec: { server: member.url, credentials: { secretRef: { name: 'exec-kubeconfig' } } } });
  const statusOf = async (name: string) => (await http('GET', `${base}${C}/${name}`)).json?.status;
  for (const [name, phase] of [
    ['api-reflected', 'Unreachable'],
    ['file-reflected', 'Unreachable'],
    ['bad-kubeconfig', 'Invalid'],
    ['unannotated', 'Invalid'],
    ['exec-kubeconfig', 'Invalid'],
    ['typo-token', 'Invalid'],
    ['typo-key', 'Invalid'],
    ['typo-nested', 'Invalid'],
  ] as const) {
    // A cluster that does not get there is a failure, and the search for leaks still runs.
    const s = await waitUntil(`${name} ${phase}`, async () => ((await statusOf(name))?.phase === phase ? statusOf(name) : undefined), 20_000).catch((err: Error) => t.fail(err.message));
    if (s) t.ok(s.message, `${name}: ${s.message}`);
  }
  t.match((await statusOf('api-reflected')).message, /HTTP 500/, 'the member\'s error is reported by its status only');
  // Reads that include clusters that are not Ready: Warning headers quote their status.
  await call('GET', '/apis/panoptes.io/v1alpha1/resources/api/v1/configmaps');
  await call('GET', '/apis/panoptes.io/v1alpha1/resources/clusters/api-reflected/api/v1/configmaps');
  await call('GET', C);
  await call('GET', `${C}?watch=1&timeoutSeconds=1&resourceVersion=0`);

  // Everything that left the processes, and everything stored.
  const metrics = [await synchro.metrics.registry.metrics(), (await http('GET', `${base}/metrics`)).text];
  const k = store.conn.knex;
  const stored = JSON.stringify([
    await store.listClusters(),
    await k('objects').select('object'),
    await k('changes').select('object', 'prev_object'),
  ]);
  const texts: Array<[string, string]> = [
    ...answers.map((a, i): [string, string] => [`answer ${i} (${a.status})`, JSON.stringify(a.headers) + a.text]),
    ...logLines.map((l, i): [string, string] => [`log line ${i}`, l]),
    ['stored statuses, objects and changes', stored],
    ...metrics.map((m, i): [string, string] => [`metrics ${i}`, m]),
  ];
  t.ok(answers.length > 100 && logLines.length > 50, `${answers.length} answers and ${logLines.length} log lines examined`);
  t.ok(answers.some((a) => a.status === 422) && answers.some((a) => a.status === 400) && answers.some((a) => Boolean(a.headers.warning)), 'errors and warnings among them');
  const leaks = texts.filter(([, text]) => needles.some((n) => text.includes(n)));
  t.same(
    leaks.map(([where, text]) => `${where}: ${text.slice(0, 300)}`),
    [],
    'no credential anywhere',
  );
});
