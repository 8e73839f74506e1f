// Owner chains and JSON path field terms as kubectl and @kubernetes/client-node ask for them,
// over HTTP against a seeded store, on both backends.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import t from 'tap';
import { writeKubeconfig } from '../../cli/commands/kubeconfig.ts';
import { get } from '../../hack/sim/testutil.ts';
import { setLogLevel } from '../../lib/log.ts';
import { backends, openTestStore, seedCluster, stopTestPostgres } from '../../storage/testing.ts';
import type { KubeObject, UpstreamEvent } from '../../storage/types.ts';
import { createApiserver } from '../server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');
const P = '/apis/panoptes.io/v1alpha1/resources';
t.teardown(stopTestPostgres);

const apiResources = [
  { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: ['po'] },
  { group: 'apps', version: 'v1', resource: 'deployments', kind: 'Deployment', namespaced: true, singularName: 'deployment', shortNames: ['deploy'] },
  { group: 'apps', version: 'v1', resource: 'replicasets', kind: 'ReplicaSet', namespaced: true, singularName: 'replicaset', shortNames: ['rs'] },
];

let rv = 100;
function event(group: string, resource: string, kind: string, name: string, uid: string, owner?: KubeObject, spec: Record<string, unknown> = {}): UpstreamEvent {
  const ownerReferences = owner ? [{ apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata!.name, uid: owner.metadata!.uid, controller: true }] : undefined;
  const object: KubeObject = { apiVersion: group ? `${group}/v1` : 'v1', kind, metadata: { name, namespace: 'shop', uid, resourceVersion: String(rv++), creationTimestamp: '2026-01-01T00:00:00Z', ...(ownerReferences ? { ownerReferences } : {}) }, spec };
  return { type: 'ADDED', group, version: 'v1', resource, object };
}

/** Deployments web (3 pods, nginx:2) and api (2 pods, nginx:1) through their ReplicaSets. */
function fleet(cluster: string): UpstreamEvent[] {
  const out: UpstreamEvent[] = [];
  for (const [name, replicas, image] of [['web', 3, 'nginx:2'], ['api', 2, 'nginx:1']] as const) {
    const dep = event('apps', 'deployments', 'Deployment', name, `${cluster}-${name}`, undefined, { replicas });
    const rs = event('apps', 'replicasets', 'ReplicaSet', `${name}-7f9`, `${cluster}-${name}-rs`, dep.object);
    out.push(dep, rs);
    for (let i = 0; i < replicas; i++) out.push(event('', 'pods', 'Pod', `${name}-7f9-${i}`, `${cluster}-${name}-${i}`, rs.object, { containers: [{ name: 'app', image }, { name: 'sidecar', image: 'envoy' }] }));
  }
  return out;
}

for (const backend of backends) {
  t.test(`${backend}: kubectl and client-node`, async (t) => {
    const { store, close } = await openTestStore(backend);
    for (const c of ['east', 'west']) {
      await seedCluster(store, c, { phase: 'Ready', ready: true, apiResources });
      await store.applyBatch(c, fleet(c));
    }
    const api = await createApiserver({ store, catalogOptions: { refreshMs: 100 } });
    const base = await api.listen('127.0.0.1', 0);
    const dir = mkdtempSync(join(tmpdir(), 'panoptes-owners-'));
    t.teardown(async () => {
      await api.close();
      await close();
      rmSync(dir, { recursive: true, force: true });
    });
    const kubeconfig = join(dir, 'kubeconfig');
    await writeKubeconfig(kubeconfig, { panoptes: { server: base, clusters: ['east', 'west'] } });
    const kubectl = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
      new Promise((resolve) => {
        execFile('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'cache'), ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
          resolve({ code: err ? 1 : 0, stdout, stderr });
        });
      });
    const names = async (args: string[]) => {
      const r = await kubectl([...args, '-o', 'jsonpath={range .items[*]}{.metadata.annotations.panoptes\\.io/cluster}/{.metadata.name}{"\\n"}{end}']);
      t.equal(r.code, 0, r.stderr);
      return r.stdout.trim().split('\n').filter(Boolean).sort();
    };
    const webPods = ['east/web-7f9-0', 'east/web-7f9-1', 'east/web-7f9-2', 'west/web-7f9-0', 'west/web-7f9-1', 'west/web-7f9-2'];

    t.test('kubectl: a Deployment’s pods by owner name, group-resource and seniority', async (t) => {
      t.same(await names(['get', 'pods', '-A', '-l', 'search.panoptes.io/ownerName=web,search.panoptes.io/ownerGR=deployments.apps,search.panoptes.io/ownerSeniority=1']), webPods);
      t.same(await names(['get', 'pods', '-n', 'shop', '-l', 'search.panoptes.io/ownerName=api-7f9,search.panoptes.io/ownerGR=replicasets.apps,search.panoptes.io/clusters=west']), ['west/api-7f9-0', 'west/api-7f9-1']);
      const raw = await kubectl(['get', '--raw', `${P}/api/v1/pods?ownerName=web&ownerGR=deployments.apps&ownerSeniority=any`]);
      t.equal(JSON.parse(raw.stdout).items.length, 6, 'as query parameters');
      const bad = await kubectl(['get', 'pods', '-A', '-l', 'search.panoptes.io/ownerName=web']);
      t.not(bad.code, 0);
      t.match(bad.stderr, /ownerName needs ownerGR/);
    });

    t.test('kubectl: field selectors on JSON paths', async (t) => {
      t.same(await names(['get', 'pods', '-A', '--field-selector', '.spec.containers[*].image=nginx:2']), webPods);
      t.same(await names(['get', 'deployments', '-A', '--field-selector', '.spec.replicas=2,metadata.namespace=shop']), ['east/api', 'west/api']);
      t.same(await names(['get', 'pods', '-A', '-l', 'field.panoptes.io/spec.containers notin (x)', '--field-selector', ".metadata.ownerReferences[*]['name'] in (api-7f9)"]), ['east/api-7f9-0', 'east/api-7f9-1', 'west/api-7f9-0', 'west/api-7f9-1']);
      const bad = await kubectl(['get', 'pods', '-A', '--field-selector', '.spec.containers[0].image=x']);
      t.not(bad.code, 0);
      t.match(bad.stderr, /array indexes are not supported/);
      const kube = await kubectl(['get', 'pods', '-A', '--field-selector', 'spec.nope=1']);
      t.match(kube.stderr, /field label not supported: spec.nope/, 'kube’s own fields keep kube’s answer');
    });

    t.test('client-node: pages of an owner chain and of a JSON path term, one rv', async (t) => {
      const kc = new KubeConfig();
      // client-node refuses plain http unless told to skip TLS verification.
      kc.loadFromOptions({ clusters: [{ name: 'p', server: `${base}${P}`, skipTLSVerify: true }], users: [{ name: 'u' }], contexts: [{ name: 'p', cluster: 'p', user: 'u' }], currentContext: 'p' });
      const core = kc.makeApiClient(CoreV1Api);
      for (const sel of [{ labelSelector: 'search.panoptes.io/ownerName=web,search.panoptes.io/ownerGR=deployments.apps,search.panoptes.io/ownerSeniority=1' }, { fieldSelector: '.spec.containers[*].image in (nginx:2)' }]) {
        const seen: string[] = [];
        let cont: string | undefined;
        let listRv: string | undefined;
        for (let page = 0; page < 10; page++) {
          const r = await core.listPodForAllNamespaces({ ...sel, limit: 4, _continue: cont });
          listRv ??= r.metadata?.resourceVersion;
          t.equal(r.metadata?.resourceVersion, listRv, 'every page at the first page’s rv');
          seen.push(...r.items.map((p) => `${p.metadata?.annotations?.['panoptes.io/cluster']}/${p.metadata?.name}`));
          cont = r.metadata?._continue;
          if (!cont) break;
        }
        t.same(seen.sort(), webPods, JSON.stringify(sel));
      }
    });

    t.test('watch: a JSON path term filters the events; an owner chain cannot be watched', async (t) => {
      const from = (await get(`${base}${P}/api/v1/pods`)).json.metadata.resourceVersion as string;
      await store.applyBatch('east', [event('', 'pods', 'Pod', 'late', 'east-late', undefined, { containers: [{ name: 'app', image: 'nginx:2' }] }), event('', 'pods', 'Pod', 'other', 'east-other', undefined, { containers: [{ name: 'app', image: 'redis' }] })]);
      const w = await get(`${base}${P}/api/v1/pods?watch=1&resourceVersion=${from}&timeoutSeconds=1&fieldSelector=${encodeURIComponent('.spec.containers[*].image=nginx:2')}`);
      const events = w.text.trim().split('\n').map((l) => JSON.parse(l) as { type: string; object: KubeObject });
      t.same(events.map((e) => `${e.type} ${e.object.metadata?.name}`), ['ADDED late']);
      const refused = await get(`${base}${P}/api/v1/pods?watch=1&ownerName=web&ownerGR=deployments.apps&ownerSeniority=1`);
      t.match(refused, { status: 400, json: { reason: 'BadRequest', message: /cannot be combined with watch/ } });
    });
  });
}
