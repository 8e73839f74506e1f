// Connection settings from kubeconfig contexts as kubectl reads them: plain http:// servers
// are used (with a warning) and get no credentials, https:// ones get the context's CA and
// credentials; inline http:// settings keep their token and say it travels in clear text.
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import { createCA, createCert } from '../apiserver/auth/certs.ts';
import { connectCluster, HttpError } from './client.ts';
import { tempDir } from '../synchro/testutil.ts';

async function recordingServer(t: Test, tls?: { key: string; cert: string; ca?: string }) {
  const seen: IncomingHttpHeaders[] = [];
  /** The common name of each request's client certificate ('' without one). */
  const clientCerts: string[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    seen.push(req.headers);
    const socket = req.socket as TLSSocket;
    clientCerts.push(typeof socket.getPeerCertificate === 'function' ? String(socket.getPeerCertificate().subject?.CN ?? '') : '');
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"major":"1","minor":"28"}');
  };
  const server = tls ? createHttpsServer({ ...tls, ...(tls.ca ? { requestCert: true, rejectUnauthorized: true } : {}) }, handler) : createHttpServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const { port } = server.address() as AddressInfo;
  return { url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`, seen, clientCerts };
}

t.test('kubeconfig contexts: http:// as kubectl reads it, https:// with CA and token', async (t) => {
  const { dir, cleanup } = tempDir();
  t.teardown(cleanup);
  const plain = await recordingServer(t);
  const ca = createCA('client-test-ca');
  const serving = createCert(ca, { commonName: 'member', hosts: ['127.0.0.1'], usage: 'server' });
  const secure = await recordingServer(t, serving);
  const file = `${dir}/kubeconfig`;
  writeFileSync(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'plain', cluster: { server: plain.url } },
        { name: 'secure', cluster: { server: secure.url, 'certificate-authority-data': Buffer.from(ca.cert).toString('base64') } },
      ],
      users: [
        { name: 'anon', user: {} },
        { name: 'tok', user: { token: 's3cret', as: 'someone' } },
        // Would fail if it were run: kubectl runs no exec plugin for an http server.
        { name: 'exec', user: { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'panoptes-no-such-plugin' } } },
      ],
      contexts: [
        { name: 'sim', context: { cluster: 'plain', user: 'anon' } },
        { name: 'plain-token', context: { cluster: 'plain', user: 'tok' } },
        { name: 'plain-exec', context: { cluster: 'plain', user: 'exec' } },
        { name: 'secure-token', context: { cluster: 'secure', user: 'tok' } },
      ],
      'current-context': 'sim',
    }),
  );

  const sim = await connectCluster({ kubeconfig: file, context: 'sim' });
  t.teardown(() => sim.close());
  t.same(await sim.get('/version'), { major: '1', minor: '28' }, 'a plain-http context is used');
  t.equal(sim.server, `${plain.url}/`);
  t.match(sim.warnings, [/^server http:\/\/127\.0\.0\.1:\d+ is plain HTTP: the connection is neither encrypted nor authenticated \(no credentials\)/]);
  t.notOk(plain.seen[0].authorization);

  const tok = await connectCluster({ kubeconfig: file, context: 'plain-token' });
  t.teardown(() => tok.close());
  await tok.get('/version');
  t.notOk(plain.seen[1].authorization, 'no token over plain http, as kubectl');
  t.equal(plain.seen[1]['impersonate-user'], 'someone', 'impersonation applies either way, as in kubectl');
  t.match(tok.warnings, [/credentials of user "tok" are not sent/]);

  const exec = await connectCluster({ kubeconfig: file, context: 'plain-exec' });
  t.teardown(() => exec.close());
  await exec.get('/version');
  t.notOk(plain.seen[2].authorization, 'the exec plugin is not run');

  const tls = await connectCluster({ kubeconfig: file, context: 'secure-token' });
  t.teardown(() => tls.close());
  await tls.get('/version');
  t.equal(secure.seen[0].authorization, 'Bearer s3cret', 'https: the token is sent');
  t.same(tls.warnings, [], 'and nothing to warn about');
});

t.test('kubeconfig files: paths relative to the kubeconfig, token file, client certificate, basic auth, exec plugin', async (t) => {
  const { dir, cleanup } = tempDir();
  t.teardown(cleanup);
  const ca = createCA('client-test-ca');
  const serving = createCert(ca, { commonName: 'member', hosts: ['127.0.0.1'], usage: 'server' });
  const client = createCert(ca, { commonName: 'synchro-client', usage: 'client' });
  const mtls = await recordingServer(t, { ...serving, ca: ca.cert });
  const secure = await recordingServer(t, serving);
  mkdirSync(`${dir}/kube/pki`, { recursive: true });
  writeFileSync(`${dir}/kube/pki/ca.crt`, ca.cert);
  writeFileSync(`${dir}/kube/pki/client.crt`, client.cert);
  writeFileSync(`${dir}/kube/pki/client.key`, client.key);
  writeFileSync(`${dir}/kube/token`, 'from-file\n');
  // An exec plugin (client.authentication.k8s.io/v1): a script that prints an ExecCredential.
  writeFileSync(`${dir}/kube/plugin.mjs`, `console.log(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 'from-exec' } }));`);
  const file = `${dir}/kube/config`;
  writeFileSync(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'mtls', cluster: { server: `${mtls.url}/`, 'certificate-authority': 'pki/ca.crt' } },
        { name: 'secure', cluster: { server: secure.url, 'certificate-authority': 'pki/ca.crt' } },
      ],
      users: [
        { name: 'cert', user: { 'client-certificate': 'pki/client.crt', 'client-key': 'pki/client.key', tokenFile: 'token' } },
        { name: 'legacy', user: { 'client-certificate': 'pki/client.crt', 'client-key': 'pki/client.key', 'token-file': 'token' } },
        { name: 'basic', user: { username: 'admin', password: 'pw', as: 'someone' } },
        { name: 'exec', user: { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [`${dir}/kube/plugin.mjs`], interactiveMode: 'Never' } } },
      ],
      contexts: [
        { name: 'cert', context: { cluster: 'mtls', user: 'cert' } },
        { name: 'legacy', context: { cluster: 'mtls', user: 'legacy' } },
        { name: 'basic', context: { cluster: 'secure', user: 'basic' } },
        { name: 'exec', context: { cluster: 'secure', user: 'exec' } },
      ],
      'current-context': 'cert',
    }),
  );

  const cert = await connectCluster({ kubeconfig: file });
  t.teardown(() => cert.close());
  t.same(await cert.get('/version'), { major: '1', minor: '28' }, 'the CA file, relative to the kubeconfig, verifies the server');
  t.equal(cert.server, `${mtls.url}/`);
  t.equal(mtls.clientCerts[0], 'synchro-client', 'the client certificate and key files are presented');
  t.equal(mtls.seen[0].authorization, 'Bearer from-file', 'the token file (tokenFile, as client-go reads it), relative to the kubeconfig, is sent');

  const legacy = await connectCluster({ kubeconfig: file, context: 'legacy' });
  t.teardown(() => legacy.close());
  await legacy.get('/version');
  t.equal(mtls.seen.at(-1)?.authorization, 'Bearer from-file', 'token-file (as @kubernetes/client-node reads it) too');

  const basic = await connectCluster({ kubeconfig: file, context: 'basic' });
  t.teardown(() => basic.close());
  await basic.get('/version');
  t.equal(secure.seen[0].authorization, `Basic ${Buffer.from('admin:pw').toString('base64')}`);
  t.equal(secure.seen[0]['impersonate-user'], 'someone');

  const exec = await connectCluster({ kubeconfig: file, context: 'exec' });
  t.teardown(() => exec.close());
  await exec.get('/version');
  t.equal(secure.seen[1].authorization, 'Bearer from-exec', 'the exec plugin runs and its token is sent');

  writeFileSync(`${dir}/bad`, stringify({ clusters: [{ name: 'x', cluster: {} }], contexts: [{ name: 'x', context: { cluster: 'x' } }], 'current-context': 'x' }));
  await t.rejects(connectCluster({ kubeconfig: `${dir}/bad` }), /clusters\[0\]\.cluster\.server is missing/);
  await t.rejects(connectCluster({ kubeconfig: file, context: 'nope' }), /has no context "nope"/);
  // The parser's message would quote the line of the error: here, the token's.
  writeFileSync(`${dir}/broken`, 'users:\n- name: u\n  user:\n    token: broken-kubeconfig-SECRET-7\n     x: y\n');
  const broken = await connectCluster({ kubeconfig: `${dir}/broken` }).catch((e: Error) => e);
  t.match(broken, { message: /kubeconfig .*broken is not valid YAML at line \d+, column \d+/ }, 'a kubeconfig that does not parse: where');
  t.notOk(String((broken as Error).message).includes('SECRET'), 'never what (the parser quotes the source)');
});

t.test('inline http:// settings keep their token and warn that it is sent in clear text', async (t) => {
  const plain = await recordingServer(t);
  const c = await connectCluster({ server: plain.url, token: 'inline-token' });
  t.teardown(() => c.close());
  await c.get('/version');
  t.equal(plain.seen[0].authorization, 'Bearer inline-token');
  t.match(c.warnings, [/plain HTTP: .*the token is sent in clear text/]);
  const anon = await connectCluster({ server: plain.url });
  t.teardown(() => anon.close());
  t.match(anon.warnings, [/\(no credentials\)/]);
});

/** A server that answers every request with `status` and `body` (closing each connection), counting requests. */
async function answering(t: Test, status: number, body: string, type = 'text/html', at: { host?: string; port?: number } = {}) {
  let hits = 0;
  const server = createHttpServer((_req, res) => {
    hits++;
    res.writeHead(status, { 'Content-Type': type, Connection: 'close' });
    res.end(body);
  });
  await new Promise<void>((r, reject) => {
    server.once('error', reject);
    server.listen(at.port ?? 0, at.host ?? '127.0.0.1', r);
  });
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { port: (server.address() as AddressInfo).port, hits: () => hits };
}

t.test('an answer that is not a success: its HTTP status and kube reason, never its body', async (t) => {
  const BODY = 'ami-id instance-id iam/security-credentials/role SECRET-METADATA-1234';
  const metadata = await answering(t, 404, `<html>${BODY}</html>`);
  const c = await connectCluster({ server: `http://127.0.0.1:${metadata.port}` });
  t.teardown(() => c.close());
  const err = await c.get('/api').catch((e: Error) => e);
  t.match(err, { status: 404, message: 'HTTP 404' });
  t.notOk(String((err as Error).message).includes('SECRET'), 'no part of the body');
  await t.rejects(c.stream('/api?watch=1'), { message: 'HTTP 404' }, 'streams too');

  const kube = await answering(t, 403, JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, message: `pods is forbidden: ${BODY}` }), 'application/json');
  const k = await connectCluster({ server: `http://127.0.0.1:${kube.port}` });
  t.teardown(() => k.close());
  await t.rejects(k.get('/api/v1/pods'), { status: 403, reason: 'Forbidden', message: 'HTTP 403 Forbidden' }, 'a kube Status: its reason');
  const odd = await answering(t, 500, JSON.stringify({ kind: 'Status', apiVersion: 'v1', reason: `x ${BODY}` }), 'application/json');
  const o = await connectCluster({ server: `http://127.0.0.1:${odd.port}` });
  t.teardown(() => o.close());
  await t.rejects(o.get('/'), { message: 'HTTP 500' }, 'a reason that is not a kube reason is not shown');
});

t.test('the network guard of API-registered clusters: at connect time, every resolved address', async (t) => {
  const member = await answering(t, 200, '{"major":"1","minor":"28"}', 'application/json');
  const none = { networkGuard: { allow: [] } };
  await t.rejects(connectCluster({ server: `http://127.0.0.1:${member.port}`, ...none }), { code: 'EREFUSEDADDRESS', message: /127\.0\.0\.1 is loopback: .*--allow-member-networks/ }, 'a literal loopback address');
  await t.rejects(connectCluster({ server: `https://[::ffff:169.254.169.254]`, ...none }), { code: 'EREFUSEDADDRESS' }, 'the metadata address, IPv4-mapped');
  await t.rejects(connectCluster({ server: `http://localhost:${member.port}`, ...none }), { code: 'EREFUSEDADDRESS' }, 'localhost');

  // A name that rebinds after a first good answer: the operator allows 127.0.0.2 only, the
  // name first resolves there, then to 127.0.0.1 where another server listens on the same port.
  const good = await answering(t, 200, '{"major":"1","minor":"28"}', 'application/json', { host: '127.0.0.2' });
  const trap = await answering(t, 200, '{"trap":true}', 'application/json', { host: '127.0.0.1', port: good.port });
  const answers = [['127.0.0.2'], ['127.0.0.1']];
  const seen: string[][] = [];
  const resolve = (_h: string, _o: unknown, cb: (err: NodeJS.ErrnoException | null, a: Array<{ address: string; family: number }>) => void) => {
    const next = answers.shift() ?? ['127.0.0.1'];
    seen.push(next);
    cb(null, next.map((address) => ({ address, family: 4 })));
  };
  const named = await connectCluster({ server: `http://member.test:${good.port}`, networkGuard: { allow: ['127.0.0.2/32'] } }, { resolve });
  t.teardown(() => named.close());
  t.same(await named.get('/version', { timeoutMs: 2000 }), { major: '1', minor: '28' }, 'the first answer is allowed');
  const rebound = await named.get('/version', { timeoutMs: 2000 }).catch((e: Error) => e);
  t.match(rebound, { code: 'EREFUSEDADDRESS', message: /member.test resolves to 127.0.0.1 is loopback/ }, 'rebound to loopback: refused');
  t.equal(trap.hits(), 0, 'the loopback server was never reached');
  t.same(seen, [['127.0.0.2'], ['127.0.0.1']], 'each connection resolved the name again');

  const allowed = await connectCluster({ server: `http://member.test:${member.port}`, token: 'tok-abcdef', networkGuard: { allow: ['127.0.0.0/8'] } }, { resolve: (_h, _o, cb) => cb(null, [{ address: '127.0.0.1', family: 4 }]) });
  t.teardown(() => allowed.close());
  t.same(await allowed.get('/version'), { major: '1', minor: '28' }, 'inside the operator allowance');
  await t.rejects(connectCluster({ server: `http://10.0.0.1:${member.port}`, token: 'tok-abcdef', networkGuard: { allow: ['127.0.0.0/8'] } }), /plain http:\/\/ with a token reaches only networks allowed/);
  const free = await connectCluster({ server: `http://127.0.0.1:${member.port}` });
  t.teardown(() => free.close());
  t.same(await free.get('/version'), { major: '1', minor: '28' }, 'without a guard (clusters.yaml, kubeconfig): free');
});

t.test('writes: POST, PUT and DELETE with preconditions, through the same connection and credentials; errors are the Status reason and its message only', async (t) => {
  const seen: Array<{ method: string; url: string; type?: string; auth?: string; body: string }> = [];
  let answer: { status: number; body: string } = { status: 200, body: '{}' };
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, type: req.headers['content-type'], auth: req.headers.authorization, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(answer.status, { 'Content-Type': 'application/json' });
      res.end(answer.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as AddressInfo).port;
  const c = await connectCluster({ server: `http://member.test:${port}`, token: 'write-token-1', networkGuard: { allow: ['127.0.0.0/8'] } }, { resolve: (_h, _o, cb) => cb(null, [{ address: '127.0.0.1', family: 4 }]) });
  t.teardown(() => c.close());

  answer = { status: 201, body: '{"metadata":{"name":"a","resourceVersion":"7"}}' };
  const created = await c.create('/api/v1/namespaces/shop/services', { metadata: { name: 'a' } }, { fieldManager: 'panoptes-test' });
  t.same(created, { metadata: { name: 'a', resourceVersion: '7' } });
  answer = { status: 200, body: '{"metadata":{"name":"a","resourceVersion":"8"}}' };
  await c.update('/api/v1/namespaces/shop/services/a', { metadata: { name: 'a', resourceVersion: '7' } });
  await c.delete('/api/v1/namespaces/shop/services/a', { preconditions: { uid: 'u1', resourceVersion: '8' } });
  t.same(
    seen.map((s) => [s.method, s.url, s.type, s.auth]),
    [
      ['POST', '/api/v1/namespaces/shop/services?fieldManager=panoptes-test', 'application/json', 'Bearer write-token-1'],
      ['PUT', '/api/v1/namespaces/shop/services/a', 'application/json', 'Bearer write-token-1'],
      ['DELETE', '/api/v1/namespaces/shop/services/a', 'application/json', 'Bearer write-token-1'],
    ],
    'each verb, with the connection\'s credentials',
  );
  t.same(JSON.parse(seen[1].body), { metadata: { name: 'a', resourceVersion: '7' } }, 'PUT carries the resourceVersion it was given');
  t.same(JSON.parse(seen[2].body), { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: 'u1', resourceVersion: '8' } }, 'DELETE carries its preconditions');

  const status = (code: number, reason: string, message: string) => ({ status: code, body: JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code, message }) });
  answer = status(409, 'Conflict', 'Operation cannot be fulfilled on services "a": the object has been modified; please apply your changes to the latest version and try again');
  const conflict = await c.update('/api/v1/namespaces/shop/services/a', {}).catch((e: unknown) => e);
  t.type(conflict, HttpError);
  t.match(conflict, { status: 409, reason: 'Conflict', message: 'HTTP 409 Conflict', statusMessage: /^Operation cannot be fulfilled on services "a"/ }, 'a kube Status: reason in the message, its own message apart');
  answer = status(403, 'Forbidden', `services is forbidden:\u0000 line\nbreak token Bearer abcdefghijkl ${'x'.repeat(2000)}`);
  const forbidden = (await c.create('/api/v1/namespaces/shop/services', {}).catch((e: unknown) => e)) as HttpError;
  t.equal(forbidden.status, 403);
  t.notOk(/[\u0000-\u001f]/.test(forbidden.statusMessage!), 'control characters dropped: one line');
  t.ok(forbidden.statusMessage!.length <= 520, 'clipped');
  t.notOk(forbidden.statusMessage!.includes('abcdefghijkl'), 'redacted');
  t.match(forbidden.statusMessage, /^services is forbidden: line break token Bearer \(redacted\)/);
  answer = { status: 404, body: '<html>SECRET-INTERNAL-PAGE</html>' };
  const notKube = (await c.delete('/x').catch((e: unknown) => e)) as HttpError;
  t.match(notKube, { status: 404, message: 'HTTP 404', statusMessage: undefined }, 'not a Status: nothing of the body');
  answer = { status: 500, body: JSON.stringify({ kind: 'Status', apiVersion: 'v2', reason: 'InternalError', message: 'SECRET-FROM-ELSEWHERE' }) };
  const other = (await c.create('/x', {}).catch((e: unknown) => e)) as HttpError;
  t.notOk(JSON.stringify({ ...other, message: other.message }).includes('SECRET'), 'a Status of another version: nothing of the body');

  const guarded = await connectCluster({ server: `http://member.test:${port}`, networkGuard: { allow: [] } }, { resolve: (_h, _o, cb) => cb(null, [{ address: '127.0.0.1', family: 4 }]) });
  t.teardown(() => guarded.close());
  const before = seen.length;
  await t.rejects(guarded.create('/api/v1/namespaces/shop/services', {}), { code: 'EREFUSEDADDRESS' }, 'the network guard refuses a write as it refuses a read');
  t.equal(seen.length, before, 'nothing reached the server');
});

t.test('a server URL with a path prefix: every request stays below it, whatever path a member gave', async (t) => {
  const seen: string[] = [];
  const server = createHttpServer((req, res) => {
    seen.push(req.url ?? '');
    res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const { port } = server.address() as AddressInfo;
  const c = await connectCluster({ server: `http://127.0.0.1:${port}/k8s/clusters/a/` });
  t.teardown(() => c.close());
  await c.get('/apis/apps/v1/namespaces/shop/deployments?limit=500&labelSelector=a%3Db');
  await c.get('/openapi/v3/apis/apps/v1?hash=ABC');
  t.same(seen, ['/k8s/clusters/a/apis/apps/v1/namespaces/shop/deployments?limit=500&labelSelector=a%3Db', '/k8s/clusters/a/openapi/v3/apis/apps/v1?hash=ABC'], 'the prefix, then the path');
  // Paths built from what a member served (resource names, OpenAPI URLs) that would climb out of the prefix.
  for (const p of ['/apis/g/v1/..\\..\\..\\..\\b\\api\\v1\\secrets', '/apis/g/v1/..%5C..%5Cb', '/openapi/v3/../../b/api/v1/secrets', '/apis/g/v1/%2e%2e/x', '/api/v1/namespaces/a%2F..%2F..%2Fb', '/api//v1']) {
    await t.rejects(c.get(p), { message: /invalid path segment|could not find/ }, p);
  }
  t.equal(seen.length, 2, 'none of them reached the server');
});
