// Request headers are trusted exactly as kube-apiserver trusts them (request-header.ts): a
// header is read only where the configuration names it. A v1.28 host's ConfigMap names no UID
// header, so a client's own X-Remote-Uid, which a v1.28 aggregator passes on, is no UID; the
// flags name none unless --requestheader-uid-headers does; a ConfigMap that names no group
// header gives no groups from X-Remote-Group; header flags apply only with
// --requestheader-client-ca-file.
import { X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { makeCertSet } from '../../hack/certs.ts';
import { authenticationConfigMap, startFakeHost } from '../../hack/testing/fakehost.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { secureServingFromFlags, type SecureFlagValues } from './config.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const certs = makeCertSet(['127.0.0.1']);

/** A request from the front proxy (its client certificate) with these headers, as the authenticator sees it. */
function fromFrontProxy(headers: Array<[string, string]>): IncomingMessage {
  const leaf = new X509Certificate(certs.frontProxyClient.cert);
  return {
    rawHeaders: headers.flat(),
    headers: Object.fromEntries(headers.map(([k, v]) => [k.toLowerCase(), v])),
    socket: { getPeerCertificate: () => ({ raw: leaf.raw }) },
    url: '/x',
  } as unknown as IncomingMessage;
}

const forged: Array<[string, string]> = [
  ['X-Remote-User', 'alice'],
  ['X-Remote-Group', 'devs'],
  ['X-Remote-Uid', 'anything'],
  ['X-Remote-Extra-Example.org%2FTeam', 'blue'],
];

async function userWith(t: Test, configMap: Record<string, string>, flags: SecureFlagValues = {}) {
  const host = await startFakeHost({ configMap, tokens: {}, policy: () => true });
  t.teardown(() => host.close());
  const s = await secureServingFromFlags({ 'bind-address': '127.0.0.1', 'secure-port': '0', ...flags }, logger('test'), { authnClient: host.client(), authzClient: host.client() });
  t.teardown(() => s.stop());
  return s.authenticator.authenticate(fromFrontProxy(forged));
}

t.test("the host's ConfigMap: exactly the headers it names", async (t) => {
  const v128 = authenticationConfigMap(certs); // what kube-apiserver 1.28 publishes: no requestheader-uid-headers
  t.same(await userWith(t, v128), { name: 'alice', groups: ['devs', 'system:authenticated'], extra: { 'example.org/team': ['blue'] } }, 'no UID: the ConfigMap names no UID header');
  t.match(await userWith(t, { ...v128, 'requestheader-uid-headers': '["X-Remote-Uid"]' }), { name: 'alice', uid: 'anything' }, 'a UID header where the ConfigMap names one (kube 1.32+)');
  const noGroups = { ...v128 };
  delete noGroups['requestheader-group-headers'];
  t.same((await userWith(t, noGroups)).groups, ['system:authenticated'], 'no group header named: X-Remote-Group is not read');
  const noExtras = { ...v128 };
  delete noExtras['requestheader-extra-headers-prefix'];
  t.same((await userWith(t, noExtras)).extra, {}, 'no extra prefix named: X-Remote-Extra-* is not read');
  const otherUser = { ...v128, 'requestheader-username-headers': '["X-Front-User"]' };
  await t.rejects(userWith(t, otherUser), { code: 401 }, 'X-Remote-User is not read when the ConfigMap names another header');
  await t.rejects(userWith(t, { ...v128, 'requestheader-uid-headers': 'X-Remote-Uid' }), /not a JSON list of strings/, 'a value that is not a JSON list is an error at start');
});

t.test('the flags: with --requestheader-client-ca-file, kube defaults (no UID header)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-rh-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'front-proxy-ca.crt'), certs.frontProxyCA.cert);
  writeFileSync(join(dir, 'client-ca.crt'), certs.clientCA.cert);
  const caFlags = { 'requestheader-client-ca-file': join(dir, 'front-proxy-ca.crt'), 'client-ca-file': join(dir, 'client-ca.crt') };
  // The ConfigMap would name a UID header: the flags win as a whole.
  const cm = { ...authenticationConfigMap(certs), 'requestheader-uid-headers': '["X-Remote-Uid"]' };
  t.same(await userWith(t, cm, caFlags), { name: 'alice', groups: ['devs', 'system:authenticated'], extra: { 'example.org/team': ['blue'] } }, 'no UID header by default');
  t.match(await userWith(t, cm, { ...caFlags, 'requestheader-uid-headers': 'X-Remote-Uid' }), { uid: 'anything' }, '--requestheader-uid-headers names it');
  t.same((await userWith(t, cm, { ...caFlags, 'requestheader-group-headers': 'X-Other-Group' })).groups, ['system:authenticated'], 'only the group headers named');
  await t.rejects(userWith(t, cm, { ...caFlags, 'requestheader-uid-headers': 'X-Custom-Uid' }), /without specifying the standard X-Remote-Uid header/, "kube's validation");
  await t.rejects(userWith(t, cm, { 'requestheader-uid-headers': 'X-Remote-Uid' }), /--requestheader-uid-headers apply only with --requestheader-client-ca-file/, 'a header flag without the CA flag would not apply: refused');
});
