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
import { connectCluster } from './client.ts';
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
