// Connection settings from kubeconfig contexts as kubectl reads them: plain http:// servers
// are used (with a warning) and get no credentials, https:// ones get the context's CA and
// credentials; inline http:// settings keep their token and say it travels in clear text.
import { writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import { createCA, createCert } from '../apiserver/auth/certs.ts';
import { connectCluster } from './client.ts';
import { tempDir } from './testutil.ts';

async function recordingServer(t: Test, tls?: { key: string; cert: string }) {
  const seen: IncomingHttpHeaders[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    seen.push(req.headers);
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"major":"1","minor":"28"}');
  };
  const server = tls ? createHttpsServer(tls, handler) : createHttpServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const { port } = server.address() as AddressInfo;
  return { url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`, seen };
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
