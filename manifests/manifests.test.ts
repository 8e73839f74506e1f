// manifests/: every kustomization renders (kubectl kustomize) and every rendered object
// passes `kubectl apply --dry-run=client --validate=false` against a simulated cluster
// (kubectl needs discovery to map kinds). Also checks what the install relies on.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import { parseAllDocuments } from 'yaml';
import { requestAttributes, resourceAttrs } from '../apiserver/auth/attributes.ts';
import { clusterAttributes, proxyAttributes } from '../apiserver/auth/authz.ts';
import { parseRules } from '../apiserver/external/rules.ts';
import type { SimRule } from '../hack/sim/auth.ts';
import { get, http, kubectl, simCluster, tempDir } from '../hack/sim/testutil.ts';
import { invalidLabelKey } from '../kube/labels.ts';
import { validateClusterSourceSpec } from '../api/cluster-source.ts';
import { validateClusterSpec } from '../api/cluster.ts';

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  rules?: { apiGroups?: string[]; resources?: string[]; resourceNames?: string[]; verbs: string[] }[];
}

const dir = new URL('.', import.meta.url).pathname;

function kustomizeAbs(cacheDir: string, path: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('kubectl', ['kustomize', path, '--load-restrictor', 'LoadRestrictionsNone', '--kubeconfig', '/dev/null', '--cache-dir', cacheDir], { timeout: 30_000 }, (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr }));
  });
}

const kustomize = (cacheDir: string, path: string) => kustomizeAbs(cacheDir, join(dir, path));

const find = (objs: Obj[], kind: string, name: string) => objs.find((o) => o.kind === kind && o.metadata.name === name);

interface RbacAttributes {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  name?: string;
}

/**
 * Whether RBAC rules allow a request, as kube-apiserver's RBAC authorizer evaluates them
 * (plugin/pkg/auth/authorizer/rbac/rbac.go RuleAllows, pkg/apis/rbac/v1/evaluation_helpers.go):
 * "*" matches every resource and subresource, "*\/<sub>" a subresource of any resource, and
 * nothing else is a wildcard (no "<resource>/*"); resourceNames match only a request's name.
 */
function rbacAllows(rules: NonNullable<Obj['rules']>, a: RbacAttributes): boolean {
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const has = (list: string[] | undefined, v: string) => (list ?? []).includes('*') || (list ?? []).includes(v);
  return rules.some(
    (r) =>
      has(r.verbs, a.verb) &&
      has(r.apiGroups, a.group) &&
      (r.resources ?? []).some((x) => x === '*' || x === combined || (a.subresource !== undefined && x === `*/${a.subresource}`)) &&
      (!r.resourceNames?.length || (a.name !== undefined && r.resourceNames.includes(a.name))),
  );
}

interface Binding extends Obj {
  roleRef: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
}

/**
 * Whether RBAC objects allow a user a request, as kube-apiserver's RBAC authorizer visits them
 * (plugin/pkg/auth/authorizer/rbac/rbac.go, VisitRulesFor): a ClusterRoleBinding's role applies
 * to every request, a RoleBinding's only to a request in its own namespace, so never to a
 * cluster-scoped one.
 */
function rbacAuthorizes(objs: Obj[], user: { name: string; groups: string[] }, a: RbacAttributes & { namespace?: string }): boolean {
  const bound = (b: Binding) => (b.subjects ?? []).some((s) => (s.kind === 'User' && s.name === user.name) || (s.kind === 'Group' && user.groups.includes(s.name)));
  return objs.some((o) => {
    if ((o.kind !== 'ClusterRoleBinding' && o.kind !== 'RoleBinding') || !bound(o as Binding)) return false;
    if (o.kind === 'RoleBinding' && o.metadata.namespace !== a.namespace) return false;
    const ref = (o as Binding).roleRef;
    const role = objs.find((r) => r.kind === ref.kind && r.metadata.name === ref.name && (ref.kind === 'ClusterRole' || r.metadata.namespace === o.metadata.namespace));
    return role !== undefined && rbacAllows(role.rules ?? [], a);
  });
}

/** kube-apiserver's own check of a request to Panoptes (its RequestInfo of the whole path: resource `resources`, then name and subresource). */
function aggregatorCheck(method: string, path: string, query = ''): RbacAttributes & { namespace?: string } {
  const [, , group, version, ...parts] = path.split('/');
  const a = resourceAttrs(method, new URLSearchParams(query), group, version, parts);
  if (!a) throw new Error(`no resource request: ${path}`);
  return a;
}

/** Panoptes' reviews of a request (apiserver/auth): the request itself and the cluster, or the proxy's one. */
function panoptesReviews(method: string, path: string, query = ''): Array<RbacAttributes & { namespace?: string }> {
  const r = requestAttributes(method, path, query);
  if (r.kind !== 'resource') throw new Error(`no resource request: ${path}`);
  if (r.proxy) return [proxyAttributes(r.attrs.verb, r.proxy.cluster)];
  return r.view ? [r.attrs, clusterAttributes(r.attrs.verb, r.view.cluster)] : [r.attrs];
}

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
  writeFileSync(crds, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [crd('ClusterRole', 'clusterroles', 'Cluster'), crd('ClusterRoleBinding', 'clusterrolebindings', 'Cluster'), crd('Role', 'roles', 'Namespaced'), crd('RoleBinding', 'rolebindings', 'Namespaced'), crd('Issuer', 'issuers', 'Namespaced', 'cert-manager.io'), crd('Certificate', 'certificates', 'Namespaced', 'cert-manager.io'), crd('Cluster', 'clusters', 'Cluster', 'panoptes.io', 'v1alpha1'), crd('ClusterSource', 'clustersources', 'Cluster', 'panoptes.io', 'v1alpha1'), crd('Cluster', 'clusters', 'Namespaced', 'postgresql.cnpg.io', 'v1')] }));
  const made = await kubectl(c, join(tmp, 'cache-setup'), ['create', '-f', crds]);
  t.equal(made.code, 0, made.stderr);
  const rendered: Record<string, Obj[]> = {};
  // The CloudNativePG component on manifests/, as an overlay of it would use it.
  const cnpgOverlay = join(tmp, 'cnpg-overlay');
  mkdirSync(cnpgOverlay);
  writeFileSync(join(cnpgOverlay, 'kustomization.yaml'), `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ${relative(cnpgOverlay, dir)}\ncomponents:\n  - ${relative(cnpgOverlay, join(dir, 'cloudnative-pg'))}\n`);
  for (const variant of ['.', cnpgOverlay, 'all-in-one', 'member-cluster', 'member-cluster/dispatcher', 'member-cluster/proxy', 'cert-manager', 'examples/pending-jobs', 'examples/cluster-registration', 'examples/cluster-import', 'examples/cluster-team-rbac']) {
    const r = variant === cnpgOverlay ? await kustomizeAbs(tmp, variant) : await kustomize(tmp, variant);
    t.equal(r.code, 0, `kubectl kustomize ${variant === cnpgOverlay ? 'manifests/ with manifests/cloudnative-pg' : `manifests/${variant}`}: ${r.stderr}`);
    const objs = parseAllDocuments(r.stdout).map((d) => d.toJS() as Obj);
    rendered[variant] = objs;
    const file = join(tmp, `${variant === '.' ? 'default' : variant === cnpgOverlay ? 'cnpg' : variant.replace(/\//g, '-')}.yaml`);
    writeFileSync(file, r.stdout);
    const a = await kubectl(c, join(tmp, 'cache'), ['apply', '--dry-run=client', '--validate=false', '-f', file], 30_000);
    t.equal(a.code, 0, `apply --dry-run=client manifests/${variant}: ${a.stderr}`);
    t.equal(a.stdout.trim().split('\n').length, objs.length, `every object of manifests/${variant} accepted`);
  }

  await t.test('cloudnative-pg: synchro on -rw, apiservers reading -ro', async (t) => {
    const cnpg = rendered[cnpgOverlay];
    const pg = cnpg.find((o) => o.kind === 'Cluster' && o.apiVersion === 'postgresql.cnpg.io/v1');
    t.equal(pg?.spec?.instances, 3, 'a primary and two replicas');
    t.notOk(find(cnpg, 'Secret', 'panoptes-postgres'), 'the operator makes the Secret');
    type Env = { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } };
    const envOf = (name: string) => ((find(cnpg, 'Deployment', name)?.spec as { template: { spec: { containers: Array<{ env: Env[] }> } } }).template.spec.containers[0].env);
    t.same(envOf('panoptes-synchro').find((e) => e.name === 'PANOPTES_STORAGE')?.valueFrom, { secretKeyRef: { name: 'panoptes-db-app', key: 'uri' } }, 'synchro writes the primary (-rw)');
    const api = envOf('panoptes-apiserver');
    t.same(api.find((e) => e.name === 'PANOPTES_STORAGE')?.valueFrom, { secretKeyRef: { name: 'panoptes-db-app', key: 'uri' } }, 'apiserver writes on -rw');
    const read = api.findIndex((e) => e.name === 'PANOPTES_STORAGE_READ');
    t.match(api[read]?.value, /^postgres:\/\/\$\(PGUSER\):\$\(PGPASSWORD\)@panoptes-db-ro\.panoptes\.svc:5432\/panoptes$/, 'and reads -ro');
    for (const v of ['PGUSER', 'PGPASSWORD']) t.ok(api.findIndex((e) => e.name === v) < read && api.findIndex((e) => e.name === v) >= 0, `${v} is defined before it is expanded`);
  });

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
  // Granting multi-cluster Service roles: the operator's, in no other role, aggregated nowhere.
  const grantor = find(all, 'ClusterRole', 'panoptes:multicluster-services-grantor');
  t.same(grantor?.rules, [{ apiGroups: ['panoptes.io'], resources: ['clusters/multiclusterservices', 'clustersources/multiclusterservices'], verbs: ['update'] }]);
  t.notOk(Object.keys(grantor?.metadata.labels ?? {}).some((k) => k.startsWith('rbac.authorization.k8s.io/aggregate-to-')), 'granting roles is granted explicitly');
  for (const role of ['panoptes:cluster-registrar', 'panoptes:cluster-importer', 'panoptes:aggregate-to-view']) {
    const rules = find(all, 'ClusterRole', role)?.rules ?? [];
    t.notOk(rbacAllows(rules, { verb: 'update', group: 'panoptes.io', resource: 'clusters', subresource: 'multiclusterservices', name: 'east' }) || rbacAllows(rules, { verb: 'update', group: 'panoptes.io', resource: 'clustersources', subresource: 'multiclusterservices', name: 'capi' }), `${role} grants no multi-cluster Service role`);
  }
  // Exporting Services: a role to bind per namespace, not aggregated anywhere; reading is in view.
  const exporter = find(all, 'ClusterRole', 'panoptes:service-exporter');
  t.same(exporter?.rules, [{ apiGroups: ['panoptes.io'], resources: ['multiclusterservices'], verbs: ['create', 'update', 'patch', 'delete', 'get', 'list', 'watch'] }]);
  t.notOk(Object.keys(exporter?.metadata.labels ?? {}).some((k) => k.startsWith('rbac.authorization.k8s.io/aggregate-to-')), 'exporting is granted explicitly');
  // view: every read through Panoptes, never the proxy (granted apart, per team).
  const view = find(all, 'ClusterRole', 'panoptes:aggregate-to-view')?.rules ?? [];
  const read = (resource: string, name?: string, subresource?: string) => ['get', 'list', 'watch'].map((verb) => ({ verb, group: 'panoptes.io', resource, subresource, name }));
  const viewAllows = (as: RbacAttributes[]) => as.every((a) => rbacAllows(view, a));
  t.ok(viewAllows(read('multiclusterservices')), 'view reads MultiClusterServices');
  for (const own of ['clusters', 'clustersources', 'collectionresources']) t.ok(viewAllows([...read(own), ...read(own, 'x', 'status')]), `view reads ${own} and their status`);
  t.ok(viewAllows(read('synchromembers').filter((a) => a.verb !== 'watch')) && viewAllows([{ verb: 'get', group: 'panoptes.io', resource: 'synchromembers', name: 'synchro-0' }]), 'view gets and lists the synchro members');
  t.notOk(rbacAllows(view, { verb: 'delete', group: 'panoptes.io', resource: 'synchromembers', name: 'synchro-0' }), 'and writes none');
  t.ok(viewAllows(read('clusters', 'east', 'resources')) && viewAllows(read('clusters', undefined, 'resources')), "Panoptes' cluster review of a read, one cluster and all");
  t.ok(viewAllows(read('resources', 'clusters', 'east')), "kube-apiserver's check of a one-cluster view");
  t.ok(viewAllows([...read('resources', 'api', 'v1'), ...read('resources', 'apis', 'apps'), ...read('resources', 'api'), ...read('resources')]), "kube-apiserver's check of the all-clusters view and its discovery");
  for (const verb of ['get', 'list', 'watch', 'create', 'patch', 'delete']) {
    t.notOk(rbacAllows(view, { verb, group: 'panoptes.io', resource: 'clusters', subresource: 'proxy', name: 'east' }), `view does not ${verb} through the proxy`);
  }
  t.notOk(rbacAllows(view, { verb: 'create', group: 'panoptes.io', resource: 'resources', name: 'clusters', subresource: 'east' }), 'view writes nothing');
  const reg = rendered['examples/cluster-registration'];
  const exCluster = find(reg, 'Cluster', 'east');
  t.same(validateClusterSpec(exCluster?.spec), [], 'the example Cluster is valid');
  const exSecret = find(reg, 'Secret', 'east-credentials');
  t.equal(exSecret?.metadata.labels?.['panoptes.io/cluster'], 'east', 'its Secret is labelled for it');
  t.equal(exSecret?.metadata.annotations?.['panoptes.io/server'], exCluster?.spec?.server, 'and annotated for its server');
  t.equal(exSecret?.metadata.namespace, 'panoptes');

  // Importing clusters: writing ClusterSources is granted explicitly; synchro reads the source kinds only where a binding lets it.
  t.same(find(all, 'ClusterRole', 'panoptes:cluster-importer')?.rules, [{ apiGroups: ['panoptes.io'], resources: ['clustersources'], verbs: ['create', 'update', 'patch', 'delete', 'get', 'list', 'watch'] }]);
  const read3 = ['get', 'list', 'watch'];
  t.same(find(all, 'ClusterRole', 'panoptes:cluster-source-reader')?.rules, [
    { apiGroups: [''], resources: ['secrets'], verbs: read3 },
    { apiGroups: ['cluster.x-k8s.io'], resources: ['clusters'], verbs: read3 },
    { apiGroups: ['multicluster.x-k8s.io'], resources: ['clusterprofiles'], verbs: read3 },
  ]);
  t.same(find(all, 'ClusterRole', 'panoptes:cluster-profile-publisher')?.rules, [
    { apiGroups: ['multicluster.x-k8s.io'], resources: ['clusterprofiles'], verbs: [...read3, 'create', 'update', 'delete'] },
    { apiGroups: ['multicluster.x-k8s.io'], resources: ['clusterprofiles/status'], verbs: ['update'] },
  ]);
  t.same(find(all, 'ClusterRole', 'panoptes:karmada-cluster-reader')?.rules, [{ apiGroups: ['cluster.karmada.io'], resources: ['clusters'], verbs: read3 }]);
  t.notOk(all.some((o) => (o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding') && JSON.stringify(o).includes('cluster-source-reader')), 'the base binds the source reader nowhere');
  const imp = rendered['examples/cluster-import'];
  const sources = imp.filter((o) => o.kind === 'ClusterSource');
  t.same(sources.map((o) => (o.spec as { type: string }).type).sort(), ['argoCD', 'clusterAPI', 'clusterProfiles', 'karmada', 'kubeconfigSecrets'], 'one example per source kind');
  for (const o of sources) t.same(validateClusterSourceSpec(o.spec), [], `the example ClusterSource ${o.metadata.name} is valid`);
  const bound = imp.filter((o) => o.kind === 'RoleBinding' && (o as unknown as { roleRef: { name: string } }).roleRef.name === 'panoptes:cluster-source-reader').map((o) => o.metadata.namespace).sort();
  t.same(bound, [...new Set(sources.flatMap((o) => (o.spec as { namespaces: string[] }).namespaces))].sort(), 'a RoleBinding in exactly the namespaces the sources name');

  // Per-cluster access (examples/cluster-team-rbac): every check of a one-cluster request, evaluated as RBAC does over the example's objects.
  await t.test('per-cluster RBAC: the example lets team-east read and proxy to east, nowhere else; a RoleBinding would not', async (t) => {
    const team = rendered['examples/cluster-team-rbac'];
    t.same(team.map((o) => o.kind).sort(), ['ClusterRole', 'ClusterRole', 'ClusterRoleBinding', 'ClusterRoleBinding']);
    const alice = { name: 'alice', groups: ['team-east', 'system:authenticated'] };
    const checks = (method: string, path: string, query = '') => [aggregatorCheck(method, path, query), ...panoptesReviews(method, path, query)];
    const allowed = (objs: Obj[], method: string, path: string, query = '') => checks(method, path, query).map((a) => rbacAuthorizes(objs, alice, a));
    const pods = (c: string) => `/apis/panoptes.io/v1alpha1/resources/clusters/${c}/api/v1/namespaces/web/pods`;
    const scale = (c: string) => `/apis/panoptes.io/v1alpha1/resources/clusters/${c}/apis/apps/v1/namespaces/web/deployments/frontend/scale`;
    t.same(checks('GET', pods('east')).map((a) => [a.verb, a.resource, a.name, a.subresource, a.namespace]), [
      ['get', 'resources', 'clusters', 'east', undefined],
      ['list', 'pods', undefined, undefined, 'web'],
      ['list', 'clusters', 'east', 'resources', undefined],
    ], "a list of east's pods of web: kube-apiserver's check and Panoptes' two reviews, two of them cluster-scoped");
    t.same(allowed(team, 'GET', pods('east')), [true, true, true], "east's pods: every check allowed");
    t.same(allowed(team, 'GET', pods('east'), 'watch=1'), [true, true, true], '...watched too');
    t.same(allowed(team, 'GET', pods('west')), [false, true, false], "west's: kube-apiserver's check and the cluster review refuse");
    t.same(allowed(team, 'GET', '/apis/panoptes.io/v1alpha1/resources/api/v1/namespaces/web/pods'), [false, true, false], 'the all-clusters view: refused');
    t.same(allowed(team, 'PATCH', scale('east')), [true, true], "a scale of east's deployment through the proxy: allowed (east's RBAC decides the rest)");
    t.same(allowed(team, 'PATCH', scale('west')), [false, false], "west's: refused");
    // The same roles bound by RoleBindings in namespace web: the cluster-scoped checks are never granted.
    const asRoleBindings = team.map((o) => (o.kind === 'ClusterRoleBinding' ? { ...o, kind: 'RoleBinding', metadata: { ...o.metadata, namespace: 'web' } } : o));
    t.same(allowed(asRoleBindings, 'GET', pods('east')), [false, true, false], 'with RoleBindings: only the review of the pods of web passes');
    t.same(allowed(asRoleBindings, 'PATCH', scale('east')), [false, false], 'and the proxy not at all');
  });

  t.same(find(rendered['.'], 'ClusterRole', 'panoptes:proxy')?.rules, [{ apiGroups: ['panoptes.io'], resources: ['clusters/proxy'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'] }], "the proxy's own review, every verb, every cluster");
  t.notOk(find(rendered['.'], 'ClusterRole', 'panoptes:proxy')?.metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-view'], 'not aggregated');
  const reader = find(rendered['member-cluster'], 'ClusterRole', 'panoptes:reader');
  t.ok(reader?.rules?.every((r) => r.verbs.every((v) => ['get', 'list', 'watch'].includes(v))), 'member reader is read-only');
  // The dispatcher's writes, applied on purpose in consumer clusters, bound to the ServiceAccount synchro uses.
  const member = rendered['member-cluster'];
  const consumer = rendered['member-cluster/dispatcher'];
  const all7 = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
  t.same(find(consumer, 'ClusterRole', 'panoptes:mcs-dispatcher')?.rules, [
    { apiGroups: [''], resources: ['services'], verbs: all7 },
    { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: all7 },
    { apiGroups: ['multicluster.x-k8s.io'], resources: ['serviceimports'], verbs: all7 },
    { apiGroups: ['multicluster.x-k8s.io'], resources: ['serviceimports/status'], verbs: ['get', 'update', 'patch'] },
  ]);
  t.match(find(consumer, 'ClusterRoleBinding', 'panoptes:mcs-dispatcher'), {
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'panoptes:mcs-dispatcher' },
    subjects: [{ kind: 'ServiceAccount', name: 'panoptes-reader', namespace: 'panoptes-system' }],
  });
  t.ok(find(member, 'ServiceAccount', 'panoptes-reader'), 'the ServiceAccount both roles are bound to');
  t.notOk(member.some((o) => o.kind === 'ClusterRole' && o.metadata.name === 'panoptes:mcs-dispatcher'), 'the member-cluster kustomization leaves the dispatcher out: only where it is applied on purpose');
});

t.test('the member-cluster roles, as a simulated cluster enforces them', async (t) => {
  const tmp = tempDir(t);
  const objs: Obj[] = [];
  for (const dirName of ['member-cluster', 'member-cluster/dispatcher', 'member-cluster/proxy']) {
    const r = await kustomize(tmp, dirName);
    t.equal(r.code, 0, r.stderr);
    objs.push(...parseAllDocuments(r.stdout).map((d) => d.toJS() as Obj));
  }
  // RBAC's resource rules, as the simulated cluster's authorizer takes them (non-resource URLs stay open there).
  const rules = (name: string): SimRule[] => (find(objs, 'ClusterRole', name)?.rules ?? []).filter((x) => x.resources).map((x) => ({ verbs: x.verbs, apiGroups: x.apiGroups, resources: x.resources }));
  const c = await simCluster(t, { workload: true, mcsCRDs: true });
  c.auth.grant('reader', { name: 'system:serviceaccount:panoptes-system:panoptes-reader', rules: rules('panoptes:reader') });
  c.auth.grant('consumer', { name: 'system:serviceaccount:panoptes-system:panoptes-reader', rules: [...rules('panoptes:reader'), ...rules('panoptes:mcs-dispatcher')] });
  const as = (token: string) => ({ Authorization: `Bearer ${token}` });
  const svc = { metadata: { name: 'web', labels: { 'app.kubernetes.io/managed-by': 'panoptes.io' } }, spec: { ports: [{ name: 'http', port: 80 }] } };
  const slice = { metadata: { name: 'east-web-abcde', labels: { 'kubernetes.io/service-name': 'web', 'endpointslice.kubernetes.io/managed-by': 'panoptes.io-mcs-dispatcher' } }, addressType: 'IPv4', endpoints: [{ addresses: ['10.244.1.9'] }], ports: [{ name: 'http', port: 8080 }] };
  const si = { apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ServiceImport', metadata: { name: 'web' }, spec: { type: 'ClusterSetIP', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] } };
  const base = c.url;
  const SI = `${base}/apis/multicluster.x-k8s.io/v1alpha1/namespaces/shop/serviceimports`;

  // The reader reads everything it syncs (ServiceExports too) and writes nothing.
  for (const path of ['/api/v1/services', '/apis/discovery.k8s.io/v1/endpointslices', '/apis/multicluster.x-k8s.io/v1alpha1/serviceexports', '/apis/apps/v1/deployments']) {
    t.equal((await get(`${base}${path}`, as('reader'))).status, 200, `reader: list ${path}`);
  }
  const denied = await http('POST', `${base}/api/v1/namespaces/shop/services`, svc, as('reader'));
  t.equal(denied.json.message, 'services is forbidden: User "system:serviceaccount:panoptes-system:panoptes-reader" cannot create resource "services" in API group "" in the namespace "shop"');

  // With the dispatcher's role: the Service, the slice, the ServiceImport and its status; updated and deleted.
  t.equal((await http('POST', `${base}/api/v1/namespaces/shop/services`, svc, as('consumer'))).status, 201);
  t.equal((await http('POST', `${base}/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices`, slice, as('consumer'))).status, 201);
  t.equal((await http('PATCH', `${base}/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices/east-web-abcde`, { endpoints: [{ addresses: ['10.244.1.10'] }] }, { ...as('consumer'), 'Content-Type': 'application/merge-patch+json' })).status, 200);
  const made = await http('POST', SI, si, as('consumer'));
  t.equal(made.status, 201, made.text);
  t.equal((await http('PUT', `${SI}/web/status`, { ...made.json, status: { clusters: [{ cluster: 'east' }] } }, as('consumer'))).status, 200);
  t.equal((await http('DELETE', `${base}/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices/east-web-abcde`, undefined, as('consumer'))).status, 200);
  t.equal((await http('DELETE', `${SI}/web`, undefined, as('consumer'))).status, 200);
  t.equal((await http('DELETE', `${base}/api/v1/namespaces/shop/services/web`, undefined, as('consumer'))).status, 200);
  // And nothing else.
  t.equal((await http('POST', `${base}/api/v1/namespaces/shop/configmaps`, { metadata: { name: 'x' } }, as('consumer'))).status, 403);
  t.equal((await get(`${base}/api/v1/namespaces/shop/secrets`, as('consumer'))).status, 403, 'no Secrets');
  t.equal((await http('POST', `${base}/apis/multicluster.x-k8s.io/v1alpha1/namespaces/shop/serviceexports`, { apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ServiceExport', metadata: { name: 'web' } }, as('consumer'))).status, 403, 'ServiceExports are read, never written');
  t.equal((await http('DELETE', `${base}/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices`, undefined, as('consumer'))).status, 403, 'no deletecollection');

  // The proxy's identity: it may act as a user (whose own rules then decide), and nothing of its own beyond reading.
  c.auth.grant('proxy', { name: 'system:serviceaccount:panoptes-system:panoptes-reader', rules: [...rules('panoptes:reader'), ...rules('panoptes:impersonator')] });
  c.auth.grant('alice-token', { name: 'alice', rules: [{ verbs: ['create'], apiGroups: [''], resources: ['configmaps'] }] });
  const asAlice = { ...as('proxy'), 'Impersonate-User': 'alice', 'Impersonate-Uid': 'u-alice', 'Impersonate-Group': 'devs', 'Impersonate-Extra-Scopes': 'all' };
  t.equal((await http('POST', `${base}/api/v1/namespaces/shop/configmaps`, { metadata: { name: 'by-alice' } }, asAlice)).status, 201, 'impersonating alice: her rights');
  t.equal((await http('POST', `${base}/api/v1/namespaces/shop/services`, svc, asAlice)).status, 403, 'and only hers');
  t.equal((await http('POST', `${base}/api/v1/namespaces/shop/configmaps`, { metadata: { name: 'by-proxy' } }, as('proxy'))).status, 403, 'no writes as itself');
  t.equal((await http('POST', `${base}/api/v1/namespaces/shop/configmaps`, { metadata: { name: 'x' } }, { ...as('reader'), 'Impersonate-User': 'alice' })).status, 403, 'the reader alone may not impersonate');
});
