// manifests/: every kustomization renders (kubectl kustomize) and every rendered object
// passes `kubectl apply --dry-run=client --validate=false` against a simulated cluster
// (kubectl needs discovery to map kinds). Also checks what the install relies on.
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import { parseAllDocuments } from 'yaml';
import { parseRules } from '../apiserver/external/rules.ts';
import { kubectl, simCluster, tempDir } from '../hack/sim/testutil.ts';
import { invalidLabelKey } from '../kube/labels.ts';
import { validateClusterSpec } from '../api/cluster.ts';

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  rules?: { apiGroups?: string[]; resources?: string[]; verbs: string[] }[];
}

const dir = new URL('.', import.meta.url).pathname;

function kustomizeAbs(cacheDir: string, path: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('kubectl', ['kustomize', path, '--load-restrictor', 'LoadRestrictionsNone', '--kubeconfig', '/dev/null', '--cache-dir', cacheDir], { timeout: 30_000 }, (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr }));
  });
}

const kustomize = (cacheDir: string, path: string) => kustomizeAbs(cacheDir, join(dir, path));

const find = (objs: Obj[], kind: string, name: string) => objs.find((o) => o.kind === kind && o.metadata.name === name);

t.test('kustomizations render and pass kubectl apply --dry-run=client', async (t) => {
  const c = await simCluster(t);
  const tmp = tempDir(t);
  // The simulated cluster serves no rbac.authorization.k8s.io: stand-in CRDs give kubectl the kinds' mappings.
  // The same for cert-manager's Issuer and Certificate (manifests/cert-manager/) and Panoptes' Cluster (the example).
  const crd = (kind: string, plural: string, scope: string, group = 'rbac.authorization.k8s.io', version = 'v1') => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: { group, scope, names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` }, versions: [{ name: version, served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }] },
  });
  const crds = join(tmp, 'rbac-crds.json');
  writeFileSync(crds, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [crd('ClusterRole', 'clusterroles', 'Cluster'), crd('ClusterRoleBinding', 'clusterrolebindings', 'Cluster'), crd('Role', 'roles', 'Namespaced'), crd('RoleBinding', 'rolebindings', 'Namespaced'), crd('Issuer', 'issuers', 'Namespaced', 'cert-manager.io'), crd('Certificate', 'certificates', 'Namespaced', 'cert-manager.io'), crd('Cluster', 'clusters', 'Cluster', 'panoptes.io', 'v1alpha1')] }));
  const made = await kubectl(c, join(tmp, 'cache-setup'), ['create', '-f', crds]);
  t.equal(made.code, 0, made.stderr);
  const rendered: Record<string, Obj[]> = {};
  for (const variant of ['.', 'all-in-one', 'member-cluster', 'member-cluster/dispatcher', 'cert-manager', 'examples/pending-jobs', 'examples/cluster-registration']) {
    const r = await kustomize(tmp, variant);
    t.equal(r.code, 0, `kubectl kustomize manifests/${variant}: ${r.stderr}`);
    const objs = parseAllDocuments(r.stdout).map((d) => d.toJS() as Obj);
    rendered[variant] = objs;
    const file = join(tmp, `${variant === '.' ? 'default' : variant.replace(/\//g, '-')}.yaml`);
    writeFileSync(file, r.stdout);
    const a = await kubectl(c, join(tmp, 'cache'), ['apply', '--dry-run=client', '--validate=false', '-f', file], 30_000);
    t.equal(a.code, 0, `apply --dry-run=client manifests/${variant}: ${a.stderr}`);
    t.equal(a.stdout.trim().split('\n').length, objs.length, `every object of manifests/${variant} accepted`);
  }

  const all = rendered['.'];
  const apisvc = find(all, 'APIService', 'v1alpha1.panoptes.io');
  t.match(apisvc?.spec, { group: 'panoptes.io', version: 'v1alpha1', service: { name: 'panoptes-apiserver', namespace: 'panoptes', port: 443 }, groupPriorityMinimum: Number, versionPriority: Number });
  t.ok(find(all, 'ClusterRoleBinding', 'panoptes:system:auth-delegator'));
  t.equal(find(all, 'RoleBinding', 'panoptes:extension-apiserver-authentication-reader')?.metadata.namespace, 'kube-system');
  t.equal(find(all, 'ClusterRole', 'panoptes:aggregate-to-view')?.metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-view'], 'true');
  const dep = find(all, 'Deployment', 'panoptes-apiserver');
  t.ok(((dep?.spec?.replicas as number) ?? 0) >= 2, 'apiserver: 2+ replicas');
  const json = JSON.stringify(dep);
  t.match(json, /"path":"\/livez"/);
  t.match(json, /"path":"\/readyz"/);
  t.match(json, /"requests":\{"cpu"/);
  t.match(json, /ghcr\.io\/panoptes\/panoptes:0\.1\.0/, 'image set by the kustomization');
  t.match(find(all, 'HorizontalPodAutoscaler', 'panoptes-apiserver')?.spec, { scaleTargetRef: { kind: 'Deployment', name: 'panoptes-apiserver' }, minReplicas: 2 });
  t.ok(find(all, 'PodDisruptionBudget', 'panoptes-apiserver'));
  t.ok(find(all, 'Service', 'panoptes-apiserver'));
  const synchro = find(all, 'Deployment', 'panoptes-synchro');
  t.ok(((synchro?.spec?.replicas as number) ?? 0) >= 2, 'synchro: 2+ replicas sharing the clusters');
  t.match(synchro?.spec?.strategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0 } });
  t.match(JSON.stringify(synchro), /"name":"PANOPTES_IDENTITY","valueFrom":\{"fieldRef":\{"fieldPath":"metadata.name"\}\}/, 'each replica is named after its pod');
  t.ok(find(all, 'PodDisruptionBudget', 'panoptes-synchro'));
  t.ok(find(all, 'Secret', 'panoptes-postgres') && find(all, 'Secret', 'panoptes-clusters'));

  const aio = rendered['all-in-one'];
  t.equal(find(aio, 'Deployment', 'panoptes-apiserver')?.spec?.replicas, 1);
  t.match(JSON.stringify(find(aio, 'Deployment', 'panoptes-apiserver')), /sqlite:\/data\/panoptes\.db/);
  t.notOk(aio.some((o) => o.kind === 'HorizontalPodAutoscaler'), 'no HPA for the single replica');
  t.ok(find(aio, 'APIService', 'v1alpha1.panoptes.io'));

  // The external-metrics component: in both variants, the APIService and the apiserver reading the optional ConfigMap.
  for (const variant of ['.', 'all-in-one']) {
    const objs = rendered[variant];
    t.match(find(objs, 'APIService', 'v1beta1.external.metrics.k8s.io')?.spec, { group: 'external.metrics.k8s.io', version: 'v1beta1', service: { name: 'panoptes-apiserver', namespace: 'panoptes', port: 443 } }, `${variant}: external metrics APIService`);
    const d = find(objs, 'Deployment', 'panoptes-apiserver') as unknown as { spec: { template: { spec: { containers: Array<{ args: string[]; volumeMounts: Array<{ name: string; mountPath: string }> }>; volumes: Array<{ name: string; configMap?: { name: string; optional?: boolean } }> } } } };
    const c = d.spec.template.spec.containers[0];
    t.ok(c.args.includes('--external-metrics-file=/etc/panoptes/external-metrics/metrics.yaml'), `${variant}: --external-metrics-file`);
    t.ok(c.volumeMounts.some((m) => m.name === 'external-metrics' && m.mountPath === '/etc/panoptes/external-metrics'), `${variant}: mounted`);
    t.same(d.spec.template.spec.volumes.find((v) => v.name === 'external-metrics')?.configMap, { name: 'panoptes-external-metrics', optional: true }, `${variant}: optional ConfigMap`);
  }
  // Without the component (another adapter owns external.metrics.k8s.io): no such APIService.
  const bare = join(tmp, 'without-component');
  mkdirSync(bare);
  writeFileSync(join(bare, 'kustomization.yaml'), `resources:\n  - ${relative(bare, join(dir, 'base'))}\n  - ${relative(bare, join(dir, 'apiserver.yaml'))}\n`);
  const without = await kustomizeAbs(tmp, bare);
  t.equal(without.code, 0, without.stderr);
  t.notOk(without.stdout.includes('v1beta1.external.metrics.k8s.io'), 'leaving the component out leaves the APIService out');
  const ex = rendered['examples/pending-jobs'];
  const hpa = find(ex, 'HorizontalPodAutoscaler', 'job-workers') as unknown as { spec: { metrics: Array<{ type: string; external: { metric: { name: string; selector: { matchLabels: Record<string, string> } }; target: { type: string } } }> } };
  t.match(hpa.spec.metrics[0], { type: 'External', external: { metric: { name: 'pending-jobs' }, target: { type: 'AverageValue' } } });
  const cm = find(ex, 'ConfigMap', 'panoptes-external-metrics') as unknown as { metadata: { namespace: string }; data: Record<string, string> };
  t.equal(cm.metadata.namespace, 'panoptes');
  const rules = parseRules(cm.data['metrics.yaml']);
  t.same(rules.problems, [], 'the example rules are valid');
  t.ok(rules.rules.has(hpa.spec.metrics[0].external.metric.name), 'the HPA names a declared metric');
  for (const k of Object.keys(hpa.spec.metrics[0].external.metric.selector.matchLabels)) t.equal(invalidLabelKey(k), undefined, `${k} is a valid label key`);

  // Cluster registration: synchro reads the credentials Secrets of its namespace (in both variants), a role to register clusters, the example.
  const secretsRole = find(all, 'Role', 'panoptes:cluster-credentials-reader');
  t.same(secretsRole?.rules, [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] }]);
  t.equal(secretsRole?.metadata.namespace, 'panoptes');
  t.match(find(all, 'RoleBinding', 'panoptes:synchro:cluster-credentials-reader'), { roleRef: { name: 'panoptes:cluster-credentials-reader' }, subjects: [{ name: 'panoptes-synchro' }] });
  t.match(JSON.stringify(synchro), /"automountServiceAccountToken":true/, 'synchro talks to the host cluster (in-cluster configuration)');
  t.match(find(aio, 'RoleBinding', 'panoptes:all-in-one:cluster-credentials-reader'), { subjects: [{ name: 'panoptes-apiserver' }] });
  t.notOk(all.some((o) => o.kind === 'RoleBinding' && JSON.stringify(o).includes('cluster-credentials-reader') && JSON.stringify(o).includes('"panoptes-apiserver"')), 'the HA apiserver gets no Secret access');
  t.match(find(all, 'ClusterRole', 'panoptes:cluster-registrar')?.rules, [{ apiGroups: ['panoptes.io'], resources: ['clusters'], verbs: ['create', 'update', 'patch', 'delete', 'get', 'list', 'watch'] }]);
  const reg = rendered['examples/cluster-registration'];
  const exCluster = find(reg, 'Cluster', 'east');
  t.same(validateClusterSpec(exCluster?.spec), [], 'the example Cluster is valid');
  const exSecret = find(reg, 'Secret', 'east-credentials');
  t.equal(exSecret?.metadata.labels?.['panoptes.io/cluster'], 'east', 'its Secret is labelled for it');
  t.equal(exSecret?.metadata.annotations?.['panoptes.io/server'], exCluster?.spec?.server, 'and annotated for its server');
  t.equal(exSecret?.metadata.namespace, 'panoptes');

  const reader = find(rendered['member-cluster'], 'ClusterRole', 'panoptes:reader');
  t.ok(reader?.rules?.every((r) => r.verbs.every((v) => ['get', 'list', 'watch'].includes(v))), 'member reader is read-only');
  const dispatcher = find(rendered['member-cluster/dispatcher'], 'ClusterRole', 'panoptes:mcs-dispatcher');
  t.same(dispatcher?.rules?.flatMap((r) => r.resources ?? []).sort(), ['endpointslices', 'serviceimports', 'serviceimports/status', 'services'], 'the dispatcher writes Services, EndpointSlices and ServiceImports, nothing else');
  t.notOk(rendered['member-cluster'].some((o) => o.kind === 'ClusterRole' && o.metadata.name === 'panoptes:mcs-dispatcher'), 'and only where it is applied on purpose');
});
