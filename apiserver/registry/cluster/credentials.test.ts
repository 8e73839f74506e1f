// Credentials go only where they were given for, through the write API (in process, both
// backends): a change of endpoint (server, caData, insecureSkipTLSVerify, tlsServerName) of
// a Cluster with stored inline credentials needs new credentials in the same request (422
// naming the rule otherwise), and the stored credentials record the endpoint they were given
// for; spec.server may not be loopback, link-local or unspecified unless the operator allows
// it, nor plain http:// with credentials outside the allowance; and no answer echoes a
// credential (Strict with kubectl's last-applied annotation, credentials given as a string).
import t from 'tap';
import { http } from '../../../hack/sim/testutil.ts';
import { setLogLevel } from '../../../lib/log.ts';
import { MemberNetworks } from '../../../member/networks.ts';
import { backends, openTestStore, stopTestPostgres } from '../../../storage/testing.ts';
import { createCA } from '../../auth/certs.ts';
import { createApiserver } from '../../server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');
t.teardown(stopTestPostgres);

const C = '/apis/panoptes.io/v1alpha1/clusters';
const TOKEN = 'bound-token-PLANTED-7d1e';
const TOKEN2 = 'second-token-PLANTED-99aa';
const MERGE = { 'Content-Type': 'application/merge-patch+json' };
const JSONPATCH = { 'Content-Type': 'application/json-patch+json' };
const b64 = (s: string) => Buffer.from(s).toString('base64');
const RULE = /inline credentials are bound to the endpoint they were given for: give spec.credentials again with a change of server, caData, insecureSkipTLSVerify or tlsServerName/;

for (const backend of backends) {
  t.test(`${backend}: a change of endpoint needs new inline credentials`, async (t) => {
    const { store, close } = await openTestStore(backend);
    const api = await createApiserver({ store, catalogOptions: { refreshMs: 60_000 } });
    const base = await api.listen('127.0.0.1', 0);
    t.teardown(async () => {
      await api.close();
      await close();
    });
    const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => http(method, base + path, body, headers);
    const stored = async (name: string) => (await store.listClusterRegistrations()).find((r) => r.name === name);
    const ca = b64(createCA('member-ca').cert);
    const ca2 = b64(createCA('other-ca').cert);

    const created = await call('POST', C, { metadata: { name: 'east' }, spec: { server: 'https://east.example:6443', caData: ca, credentials: { token: TOKEN } } });
    t.equal(created.status, 201, created.text);
    t.same((await stored('east'))?.credentials, { token: TOKEN, endpoint: { server: 'https://east.example:6443', caData: ca } }, 'the credentials record their endpoint');

    const refusals: Array<[string, string, unknown, Record<string, string>, string]> = [
      ['server, merge patch', 'PATCH', { spec: { server: 'http://evil.example' } }, MERGE, 'spec.server'],
      ['server, dry run', 'PATCH?dryRun=All', { spec: { server: 'https://evil.example' } }, MERGE, 'spec.server'],
      ['server, JSON patch', 'PATCH', [{ op: 'replace', path: '/spec/server', value: 'https://evil.example' }], JSONPATCH, 'spec.server'],
      ['caData', 'PATCH', { spec: { caData: ca2 } }, MERGE, 'spec.caData'],
      ['caData removed', 'PATCH', { spec: { caData: null } }, MERGE, 'spec.caData'],
      ['insecureSkipTLSVerify', 'PATCH', { spec: { caData: null, insecureSkipTLSVerify: true } }, MERGE, 'spec.caData'],
      ['tlsServerName', 'PATCH', { spec: { tlsServerName: 'evil.example' } }, MERGE, 'spec.tlsServerName'],
    ];
    for (const [what, method, body, headers, field] of refusals) {
      const [m, q] = method.split('?');
      const r = await call(m, `${C}/east${q ? `?${q}` : ''}`, body, headers);
      t.match(r, { status: 422, json: { reason: 'Invalid', details: { causes: [{ reason: 'FieldValueForbidden', field }] } } }, what);
      t.match(r.json?.message, RULE, `${what}: the cause names the rule`);
    }
    const current = (await call('GET', `${C}/east`)).json;
    const put = await call('PUT', `${C}/east`, { ...current, spec: { ...current.spec, server: 'https://evil.example' } });
    t.match(put, { status: 422, json: { details: { causes: [{ field: 'spec.server' }] } } }, 'an update too');
    t.equal(((await stored('east'))?.object.spec as { server?: string }).server, 'https://east.example:6443', 'nothing moved');

    const same = await call('PATCH', `${C}/east`, { spec: { server: 'https://EAST.example:6443/' } }, MERGE);
    t.equal(same.status, 200, 'the same endpoint spelled differently is no change');
    const other = await call('PATCH', `${C}/east`, { spec: { resources: ['pods'] } }, MERGE);
    t.equal(other.status, 200, 'other fields change freely');

    const moved = await call('PATCH', `${C}/east`, { spec: { server: 'https://east2.example:6443', credentials: { token: TOKEN2 } } }, MERGE);
    t.equal(moved.status, 200, 'new credentials with the new endpoint');
    t.same((await stored('east'))?.credentials, { token: TOKEN2, endpoint: { server: 'https://east2.example:6443', caData: ca } });
    const again = await call('PATCH', `${C}/east`, { spec: { server: 'https://east3.example:6443', credentials: { token: TOKEN2 } } }, MERGE);
    t.equal(again.status, 200, 'the same credentials given again bind to the new endpoint');
    t.equal((await stored('east'))?.credentials?.endpoint?.server, 'https://east3.example:6443');
    t.ok(again.json.metadata.generation > moved.json.metadata.generation);

    const toSecret = await call('PATCH', `${C}/east`, { spec: { server: 'https://east4.example:6443', credentials: { secretRef: { name: 'east-creds' } } } }, MERGE);
    t.equal(toSecret.status, 200, 'a Secret instead: the inline credentials are dropped');
    t.equal((await stored('east'))?.credentials, undefined);
    t.equal((await call('PATCH', `${C}/east`, { spec: { server: 'https://east5.example:6443' } }, MERGE)).status, 200, 'without inline credentials the endpoint is free');

    t.equal((await call('POST', C, { metadata: { name: 'plain' }, spec: { server: 'https://plain.example' } })).status, 201);
    t.equal((await call('PATCH', `${C}/plain`, { spec: { server: 'https://plain2.example' } }, MERGE)).status, 200, 'nor does a Cluster without credentials');
  });
}

t.test('spec.server: loopback, link-local and unspecified refused unless allowed; http:// with credentials', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  const strict = await createApiserver({ store, catalogOptions: { refreshMs: 60_000 } });
  const lenient = await createApiserver({ store, catalogOptions: { refreshMs: 60_000 }, memberNetworks: MemberNetworks.parse('127.0.0.0/8') });
  const strictBase = await strict.listen('127.0.0.1', 0);
  const lenientBase = await lenient.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await strict.close();
    await lenient.close();
    await close();
  });
  let n = 0;
  const create = (base: string, spec: Record<string, unknown>) => http('POST', base + C, { metadata: { name: `c${++n}` }, spec });

  for (const server of [
    'http://127.0.0.1:6443',
    'https://127.1:6443',
    'https://2130706433',
    'https://169.254.169.254/latest/meta-data',
    'https://0.0.0.0:6443',
    'https://[::1]:6443',
    'https://[::]:6443',
    'https://[::ffff:127.0.0.1]:6443',
    'https://[::ffff:169.254.169.254]',
    'https://[fe80::1]:6443',
    'https://localhost:6443',
    'https://api.localhost:6443',
  ]) {
    const r = await create(strictBase, { server });
    t.match(r, { status: 422, json: { details: { causes: [{ field: 'spec.server', reason: 'FieldValueForbidden', message: /--allow-member-networks/ }] } } }, server);
  }
  t.equal((await create(strictBase, { server: 'https://10.0.0.1:6443' })).status, 201, 'a private address is a member cluster');
  t.equal((await create(strictBase, { server: 'https://east.example:6443' })).status, 201, 'a name is checked when synchro connects');

  const refusedPatch = await http('PATCH', `${strictBase}${C}/c${n}`, { spec: { server: 'https://169.254.169.254' } }, MERGE);
  t.match(refusedPatch, { status: 422, json: { details: { causes: [{ field: 'spec.server' }] } } }, 'a patch too');

  t.equal((await create(lenientBase, { server: 'http://127.0.0.1:6443', credentials: { token: TOKEN } })).status, 201, 'allowed by the operator, plain http with a token included');
  t.equal((await create(lenientBase, { server: 'https://localhost:6443' })).status, 201, 'localhost with 127.0.0.0/8 allowed');
  t.equal((await create(lenientBase, { server: 'https://169.254.169.254' })).status, 422, 'the allowance covers its networks only');

  const clear = await create(strictBase, { server: 'http://east.example', credentials: { token: TOKEN } });
  t.match(clear, { status: 422, json: { details: { causes: [{ field: 'spec.server', message: /plain http:\/\/ would send the credentials in clear text/ }] } } }, 'plain http:// with credentials');
  t.equal((await create(strictBase, { server: 'http://east.example', credentials: { secretRef: { name: 's' } } })).status, 422, 'a Secret is credentials too');
  t.equal((await create(strictBase, { server: 'http://east.example' })).status, 201, 'plain http:// without credentials');
  t.equal((await create(lenientBase, { server: 'http://10.0.0.1', credentials: { token: TOKEN } })).status, 422, 'outside the allowance');
});

t.test('no answer echoes a credential', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  const api = await createApiserver({ store, catalogOptions: { refreshMs: 60_000 } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    await close();
  });
  const answers: string[] = [];
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const r = await http(method, base + path, body, headers);
    answers.push(JSON.stringify(r.headers) + r.text);
    return r;
  };
  t.equal((await call('POST', C, { metadata: { name: 'east' }, spec: { server: 'https://east.example', credentials: { token: TOKEN } } })).status, 201);
  const lastApplied = JSON.stringify({ apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'east' }, spec: { server: 'https://east.example', resorces: ['x'], credentials: { token: TOKEN } } });
  const strict = await call('PATCH', `${C}/east?fieldValidation=Strict`, { metadata: { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': lastApplied } }, spec: { resorces: ['x'], credentials: { token: TOKEN } } }, MERGE);
  t.match(strict, { status: 422, json: { message: /strict decoding error: unknown field "spec.resorces"/ } }, 'Strict with kubectl\'s last-applied annotation');
  const asString = await call('POST', C, { metadata: { name: 'str' }, spec: { server: 'https://str.example', credentials: TOKEN } });
  t.match(asString, { status: 422, json: { details: { causes: [{ field: 'spec.credentials' }] } } }, 'credentials given as a string');
  const asNumber = await call('POST', C, { metadata: { name: 'num' }, spec: { server: 'https://num.example', credentials: { token: 73_519_286_401 } } });
  t.match(asNumber, { status: 422, json: { details: { causes: [{ field: 'spec.credentials.token' }] } } }, 'a token of the wrong type');
  const warned = await call('PATCH', `${C}/east`, { metadata: { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': lastApplied } }, spec: { resorces: ['x'] } }, MERGE);
  t.equal(warned.status, 200);
  t.notOk(JSON.stringify(warned.json.metadata.annotations).includes('resorces'), 'last-applied keeps only the served fields of the spec');
  for (const a of answers) t.notOk(a.includes(TOKEN) || a.includes('73519286401'), `no credential in: ${a.slice(0, 160)}`);
});
