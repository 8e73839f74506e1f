// APIs a real cluster serves besides its stored resources, as far as the proxy's users need
// them: metrics.k8s.io/v1beta1 (metrics-server: PodMetrics and NodeMetrics, for kubectl top;
// usage derived from each object's name, steady from one call to the next) and
// authorization.k8s.io/v1 SelfSubjectAccessReview and SelfSubjectRulesReview (kubectl auth
// can-i, answered from the caller's simulated RBAC rules, or the impersonated user's). Both
// are listed in discovery; neither is listable and watchable, so synchro does not sync them.
// Ref: sigs.k8s.io/metrics-server (PodMetrics shape), k8s.io/api/authorization/v1.
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { matchesLabels, parseLabelSelector } from '../../kube/labels.ts';
import { StatusError } from '../../kube/status.ts';
import { ruleAllows, type SimAuth, type SimUser } from './auth.ts';
import { readBody, sendJson } from './http.ts';
import type { ApiServiceRef } from './resources.ts';
import type { Store } from './store.ts';
import { isObject, kubeTime, type JsonObject, type KObject } from './types.ts';

/**
 * The extra groups, as the registry lists its own (discovery.ts appends them). metrics.k8s.io
 * is metrics-server's, an aggregated API: its APIService names the Service (apiservices.ts).
 */
export const extraGroups: { name: string; version: string; service?: ApiServiceRef; resources: { resource: string; kind: string; singularName: string; namespaced: boolean; verbs: string[] }[] }[] = [
  {
    name: 'authorization.k8s.io',
    version: 'v1',
    resources: [
      { resource: 'selfsubjectaccessreviews', kind: 'SelfSubjectAccessReview', singularName: 'selfsubjectaccessreview', namespaced: false, verbs: ['create'] },
      { resource: 'selfsubjectrulesreviews', kind: 'SelfSubjectRulesReview', singularName: 'selfsubjectrulesreview', namespaced: false, verbs: ['create'] },
    ],
  },
  {
    name: 'metrics.k8s.io',
    version: 'v1beta1',
    service: { namespace: 'kube-system', name: 'metrics-server', port: 443 },
    resources: [
      { resource: 'nodes', kind: 'NodeMetrics', singularName: '', namespaced: false, verbs: ['get', 'list'] },
      { resource: 'pods', kind: 'PodMetrics', singularName: '', namespaced: true, verbs: ['get', 'list'] },
    ],
  },
];

const notFound = () => new StatusError('NotFound', 'the server could not find the requested resource');

/** A steady number in [lo, hi) from a name. */
function steady(name: string, lo: number, hi: number): number {
  return lo + (createHash('sha256').update(name).digest().readUInt32BE(0) % (hi - lo));
}

function podMetrics(pod: KObject, now: string): JsonObject {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const containers = (Array.isArray(spec.containers) ? spec.containers : []).filter(isObject);
  const id = `${pod.metadata.namespace}/${pod.metadata.name}`;
  return {
    metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace, creationTimestamp: now, labels: pod.metadata.labels ?? {} },
    timestamp: now,
    window: '30s',
    containers: containers.map((c) => ({ name: c.name, usage: { cpu: `${steady(`${id}/${String(c.name)}/cpu`, 1, 250)}m`, memory: `${steady(`${id}/${String(c.name)}/mem`, 8, 512)}Mi` } })),
  };
}

function nodeMetrics(node: KObject, now: string): JsonObject {
  const name = node.metadata.name!;
  return { metadata: { name, creationTimestamp: now, labels: node.metadata.labels ?? {} }, timestamp: now, window: '30s', usage: { cpu: `${steady(`${name}/cpu`, 100, 3000)}m`, memory: `${steady(`${name}/mem`, 1024, 16384)}Mi` } };
}

const running = (pod: KObject) => isObject(pod.status) && pod.status.phase === 'Running';

function serveMetrics(store: Store, res: ServerResponse, url: URL, rest: string[]): void {
  let namespace: string | undefined;
  let parts = rest;
  if (parts[0] === 'namespaces' && parts.length >= 3) {
    namespace = parts[1];
    parts = parts.slice(2);
  }
  const [resource, name, more] = parts;
  if (more !== undefined || (resource !== 'pods' && resource !== 'nodes') || (resource === 'nodes' && namespace !== undefined)) throw notFound();
  const labels = parseLabelSelector(url.searchParams.get('labelSelector') ?? '');
  const now = kubeTime();
  const objects = store.list(resource === 'pods' ? '/pods' : '/nodes', { namespace }).items.filter((o) => (resource === 'nodes' || running(o)) && matchesLabels(labels, o.metadata.labels));
  const toMetrics = (o: KObject) => (resource === 'pods' ? podMetrics(o, now) : nodeMetrics(o, now));
  const kind = resource === 'pods' ? 'PodMetrics' : 'NodeMetrics';
  if (name !== undefined) {
    const o = objects.find((x) => x.metadata.name === name);
    if (!o) throw new StatusError('NotFound', `${resource}.metrics.k8s.io "${name}" not found`, { name, group: 'metrics.k8s.io', kind: resource });
    return sendJson(res, 200, { kind, apiVersion: 'metrics.k8s.io/v1beta1', ...toMetrics(o) });
  }
  sendJson(res, 200, { kind: `${kind}List`, apiVersion: 'metrics.k8s.io/v1beta1', metadata: {}, items: objects.map(toMetrics) });
}

async function serveReview(auth: SimAuth, user: SimUser | undefined, req: IncomingMessage, res: ServerResponse, rest: string[]): Promise<void> {
  if (req.method !== 'POST' || rest.length !== 1 || (rest[0] !== 'selfsubjectaccessreviews' && rest[0] !== 'selfsubjectrulesreviews')) throw notFound();
  const body = await readBody(req);
  const spec = isObject(body) && isObject(body.spec) ? body.spec : {};
  const rules = user?.rules;
  if (rest[0] === 'selfsubjectaccessreviews') {
    const a = isObject(spec.resourceAttributes) ? spec.resourceAttributes : undefined;
    let allowed = true;
    if (a && rules) {
      const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
      allowed = rules.some((r) => ruleAllows(r, { verb: str(a.verb) ?? '', group: str(a.group) ?? '', resource: str(a.resource) ?? '', subresource: str(a.subresource), namespace: str(a.namespace), name: str(a.name) }));
    }
    return sendJson(res, 201, { kind: 'SelfSubjectAccessReview', apiVersion: 'authorization.k8s.io/v1', metadata: { creationTimestamp: null }, spec, status: { allowed } }); // RBAC gives a denial no reason (kubectl prints a bare "no")
  }
  const namespace = typeof spec.namespace === 'string' ? spec.namespace : '';
  const resourceRules = (rules ?? [{ verbs: ['*'] }])
    .filter((r) => !r.namespaces || r.namespaces.includes(namespace) || r.namespaces.includes('*'))
    .map((r) => ({ verbs: r.verbs, apiGroups: r.apiGroups ?? ['*'], resources: r.resources ?? ['*'] }));
  sendJson(res, 201, {
    kind: 'SelfSubjectRulesReview',
    apiVersion: 'authorization.k8s.io/v1',
    metadata: { creationTimestamp: null },
    spec,
    status: { resourceRules, nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['*'] }], incomplete: false },
  });
}

/** Serves a request of an extra group (true), or leaves it (false). */
export async function serveExtraApi(store: Store, auth: SimAuth, user: SimUser | undefined, req: IncomingMessage, res: ServerResponse, url: URL, group: string, version: string, rest: string[]): Promise<boolean> {
  if (group === 'metrics.k8s.io' && version === 'v1beta1') {
    if (req.method !== 'GET') throw new StatusError('MethodNotAllowed', 'the server does not allow this method on the requested resource');
    serveMetrics(store, res, url, rest);
    return true;
  }
  if (group === 'authorization.k8s.io' && version === 'v1') {
    await serveReview(auth, user, req, res, rest);
    return true;
  }
  return false;
}
