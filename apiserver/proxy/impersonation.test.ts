// The headers of a proxied request: impersonation as client-go writes it, and nothing of the
// client's credentials, identity claims or hop-by-hop headers.
import t from 'tap';
import { forwardedHeaders, headerKeyEscape, impersonationHeaders, proxiedHeaders } from './impersonation.ts';

t.test('extra keys are percent-encoded as client-go does (headerKeyEscape)', async (t) => {
  t.equal(headerKeyEscape('scopes'), 'scopes');
  t.equal(headerKeyEscape('example.org/Team'), 'example.org%2FTeam');
  t.equal(headerKeyEscape('a b%c'), 'a%20b%25c');
  t.equal(headerKeyEscape('ü'), '%C3%BC', 'UTF-8 bytes');
  t.equal(decodeURIComponent(headerKeyEscape('authentication.kubernetes.io/credential-id')), 'authentication.kubernetes.io/credential-id', 'the member decodes it back');
});

t.test('impersonation headers name the user, uid, every group and every extra value', async (t) => {
  const h = impersonationHeaders({ name: 'alice', uid: 'u-1', groups: ['devs', 'system:authenticated'], extra: { 'example.org/team': ['a', 'b'], empty: [] } });
  t.same(h, { 'Impersonate-User': 'alice', 'Impersonate-Uid': 'u-1', 'Impersonate-Group': ['devs', 'system:authenticated'], 'Impersonate-Extra-example.org%2Fteam': ['a', 'b'] });
  t.same(impersonationHeaders({ name: 'system:anonymous', groups: [], extra: {} }), { 'Impersonate-User': 'system:anonymous' });
});

t.test('credentials, identity claims and hop-by-hop headers are not forwarded', async (t) => {
  const out = forwardedHeaders({
    accept: 'application/json',
    'content-type': 'application/merge-patch+json',
    'user-agent': 'kubectl/v1.28',
    authorization: 'Bearer client-token',
    'proxy-authorization': 'Basic eA==',
    'impersonate-user': 'system:admin',
    'impersonate-group': 'system:masters',
    'impersonate-uid': '0',
    'impersonate-extra-scopes': 'all',
    'x-remote-user': 'admin',
    'x-remote-group': 'system:masters',
    connection: 'keep-alive, x-custom-hop',
    'x-custom-hop': '1',
    'keep-alive': 'timeout=5',
    'transfer-encoding': 'chunked',
    upgrade: 'websocket',
    te: 'trailers',
    host: 'panoptes:8443',
    'content-length': '12',
    cookie: 'session=1',
    ':path': '/x',
  });
  t.same(out, { accept: 'application/json', 'content-type': 'application/merge-patch+json', 'user-agent': 'kubectl/v1.28' });
});

t.test("the user's impersonation wins over the client's and the connection's own", async (t) => {
  const h = proxiedHeaders({ 'impersonate-user': 'system:admin', accept: '*/*' }, { name: 'alice', groups: ['devs'], extra: {} }, { Authorization: 'Bearer panoptes', 'Impersonate-User': 'kubeconfig-as' });
  t.same(h, { accept: '*/*', Authorization: 'Bearer panoptes', 'Impersonate-User': 'alice', 'Impersonate-Group': ['devs'] });
});

t.test('values go as their UTF-8 bytes (as Go sends them); control characters are a 400, never a 500', async (t) => {
  const h = impersonationHeaders({ name: 'josé 日本', groups: ['équipe'], extra: { team: ['ü'] } });
  t.equal(Buffer.from(h['Impersonate-User'] as string, 'latin1').toString('utf8'), 'josé 日本');
  t.equal(Buffer.from((h['Impersonate-Group'] as string[])[0], 'latin1').toString('utf8'), 'équipe');
  t.equal(Buffer.from((h['Impersonate-Extra-team'] as string[])[0], 'latin1').toString('utf8'), 'ü');
  t.throws(() => impersonationHeaders({ name: 'eve\r\nImpersonate-Group: system:masters', groups: [], extra: {} }), { reason: 'BadRequest', message: /control characters/ });
  t.throws(() => impersonationHeaders({ name: 'eve', groups: ['a\nb'], extra: {} }), { reason: 'BadRequest', message: /control characters/ });
});
