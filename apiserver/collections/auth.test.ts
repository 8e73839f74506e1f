// Collections in aggregated mode: a collection is authorized as a get of
// collectionresources.panoptes.io, and then kind by kind as a list (watch) of each resource
// it reads through the view, so it never shows what the user could not list kind by kind.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { makeCertSet } from '../../hack/certs.ts';
import { authenticationConfigMap, frontProxyGet, startFakeHost } from '../../hack/testing/fakehost.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { openTestStore, podEvent, seedCluster } from '../../storage/testing.ts';
import { secureServingFromFlags } from '../auth/config.ts';
import { createApiserver } from '../server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');


t.test('a collection is authorized kind by kind', async (t) => {
  const certs = makeCertSet(['127.0.0.1', 'localhost']);
  const host = await startFakeHost({
    configMap: authenticationConfigMap(certs),
    tokens: {},
    policy: (s) => {
      const a = s.resourceAttributes;
      if (!a) return 'no rule';
      const collections = a.group === 'panoptes.io' && a.resource === 'collectionresources' && ['get', 'list', 'watch'].includes(a.verb);
      const viewRead = a.group === 'panoptes.io' && a.resource === 'clusters' && a.subresource === 'resources';
      if (collections || viewRead) return true; // everyone may read collections and through the views
      if (s.user === 'ops') return true;
      if (s.user === 'dev' && a.verb === 'list' && a.group === '' && a.resource === 'pods' && a.namespace === 'team-a') return true; // a RoleBinding in team-a: list only
      return 'no RBAC rule';
    },
  });
  const { store, close } = await openTestStore('sqlite');
  const resources = [
    { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' },
    { group: '', version: 'v1', resource: 'secrets', kind: 'Secret', namespaced: true, singularName: 'secret' },
  ];
  await seedCluster(store, 'a', { phase: 'Ready', ready: true, apiResources: resources });
  await store.applyBatch('a', [
    podEvent('ADDED', 'team-a', 'p1', '10'),
    { type: 'ADDED', group: '', version: 'v1', resource: 'secrets', object: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'team-a', uid: 's1', resourceVersion: '11' }, data: { password: 'aHVudGVyMg==' } } },
  ]);
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-coll-auth-'));
  writeFileSync(join(dir, 'tls.crt'), certs.serving.cert);
  writeFileSync(join(dir, 'tls.key'), certs.serving.key);
  const secure = await secureServingFromFlags({ 'tls-cert-file': join(dir, 'tls.crt'), 'tls-private-key-file': join(dir, 'tls.key') }, logger('test'), { authnClient: host.client(), authzClient: host.client() });
  const api = await createApiserver({ store, secure, log: logger('test') });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    secure.stop();
    await close();
    await host.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const as = (user: string, path: string) => frontProxyGet(base, path, certs.servingCA.cert, certs.frontProxyClient, user);
  const C = '/apis/panoptes.io/v1alpha1/collectionresources';

  const ops = await as('ops', `${C}/any?resources=secrets,pods`);
  t.equal(ops.status, 200, ops.body);
  t.equal(JSON.parse(ops.body).items.length, 2);

  host.requests.length = 0;
  const sneaky = await as('dev', `${C}/any?resources=secrets`);
  t.equal(sneaky.status, 403, 'secrets through a collection: as forbidden as listing them');
  t.match(JSON.parse(sneaky.body), { reason: 'Forbidden', message: /cannot list resource "secrets" in API group "" at the cluster scope/ });
  t.notMatch(sneaky.body, /aHVudGVyMg==/);
  t.ok(
    host.sars().some((s) => s.resourceAttributes?.resource === 'secrets' && s.resourceAttributes.verb === 'list'),
    'the kind was reviewed as a list of secrets',
  );

  const everywhere = await as('dev', `${C}/any?resources=pods`);
  t.equal(everywhere.status, 403, 'pods of every namespace: the user may list them in team-a only');
  const own = await as('dev', `${C}/any?resources=pods&namespaces=team-a`);
  t.equal(own.status, 200, `pods of its namespace, named: ${own.body}`);
  t.equal(JSON.parse(own.body).items.length, 1);
  const watch = await as('dev', `${C}/any?resources=pods&namespaces=team-a&watch=true&timeoutSeconds=1`);
  t.equal(watch.status, 403, 'a watch is reviewed as a watch of each kind');
  t.match(JSON.parse(watch.body).message, /cannot watch resource "pods" in API group "" in the namespace "team-a"/);
});
