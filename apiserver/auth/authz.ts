// Authorization by SubjectAccessReview against the host cluster (kube's delegated
// authorization), answers cached briefly, with always-allow groups (system:masters) and
// always-allow paths.
//
// A resource read through Panoptes needs TWO allowed reviews (both asked at once):
//   1. the resource itself: the real verb (get, list, watch), group, version, resource,
//      namespace and name of the Kubernetes path inside the Panoptes URL. The host cluster's
//      RBAC for `pods` thus decides who reads pods of member clusters too, namespace by
//      namespace (namespace sameness across the fleet);
//   2. the cluster: verb the same, group panoptes.io, version v1alpha1, resource `clusters`,
//      subresource `resources`, name = the cluster of a one-cluster view URL, no name for
//      the all-clusters view. RBAC grants per cluster with
//        {apiGroups: [panoptes.io], resources: [clusters/resources], resourceNames: [east], verbs: [get, list, watch]}
//      and all clusters without resourceNames.
// Non-resource paths (discovery, /version, /openapi, /metrics) are reviewed as
// nonResourceAttributes {path, verb}; kube's system:discovery role covers discovery.
import { createHash } from 'node:crypto';
import type { Logger } from '../../lib/log.ts';
import { StatusError } from '../../kube/status.ts';
import type { RequestAttributes, ResourceAttributes } from './attributes.ts';
import { panoptesGroupName, panoptesVersion } from '../discovery/panoptes-group.ts';
import type { UserInfo } from './authn.ts';
import { TtlCache } from './cache.ts';
import type { HostClient } from './hostclient.ts';

export interface AuthzConfig {
  client: HostClient;
  /** Members of these groups are allowed without a review (default system:masters). */
  alwaysAllowGroups: string[];
  /** Paths allowed without a review (`/foo/*` matches the prefix). */
  alwaysAllowPaths: string[];
  allowTtlMs: number;
  denyTtlMs: number;
}

export interface SubjectAccessReviewSpec {
  user: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
  resourceAttributes?: ResourceAttributes;
  nonResourceAttributes?: { path: string; verb: string };
}

interface SarStatus {
  status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
}

interface Decision {
  allowed: boolean;
  reason: string;
}

/** The second review of a resource read through a view (see the header comment). */
export function clusterAttributes(verb: string, cluster: string): ResourceAttributes {
  const a: ResourceAttributes = { verb, group: panoptesGroupName, version: panoptesVersion, resource: 'clusters', subresource: 'resources' };
  if (cluster) a.name = cluster;
  return a;
}

/** The review of a request the proxy forwards to `cluster` (see Authorizer.authorizeProxy). */
export function proxyAttributes(verb: string, cluster: string): ResourceAttributes {
  return { verb, group: panoptesGroupName, version: panoptesVersion, resource: 'clusters', subresource: 'proxy', name: cluster };
}

/** kube-apiserver's forbidden Status message and details (responsewriters.forbiddenMessage + errors.NewForbidden). */
export function forbidden(user: UserInfo, req: { resource?: ResourceAttributes; path?: string; verb: string }, reason: string): StatusError {
  const why = reason ? `: ${reason}` : '';
  if (!req.resource) return new StatusError('Forbidden', `forbidden: User ${JSON.stringify(user.name)} cannot ${req.verb} path ${JSON.stringify(req.path)}${why}`, {});
  const a = req.resource;
  const res = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const scope = a.namespace ? `in the namespace ${JSON.stringify(a.namespace)}` : 'at the cluster scope';
  const msg = `User ${JSON.stringify(user.name)} cannot ${a.verb} resource ${JSON.stringify(res)} in API group ${JSON.stringify(a.group)} ${scope}${why}`;
  const qualified = a.group ? `${a.resource}.${a.group}` : a.resource;
  const head = a.name ? `${qualified} ${JSON.stringify(a.name)}` : qualified;
  const details: { name?: string; group: string; kind: string } = { group: a.group, kind: a.resource };
  if (a.name) details.name = a.name;
  return new StatusError('Forbidden', `${head} is forbidden: ${msg}`, details);
}

function pathAllowed(path: string, patterns: string[]): boolean {
  return patterns.some((p) => (p.endsWith('*') ? path.startsWith(p.slice(0, -1)) : p === path));
}

export class Authorizer {
  private readonly cache = new TtlCache<Decision>();

  constructor(
    private readonly cfg: AuthzConfig,
    private readonly log: Logger,
  ) {}

  /** Resolves when allowed; throws 403 Forbidden (or 500 when the host cluster does not answer). */
  async authorize(user: UserInfo, req: RequestAttributes): Promise<void> {
    if (user.groups.some((g) => this.cfg.alwaysAllowGroups.includes(g))) return;
    if (req.kind === 'nonResource') {
      if (pathAllowed(req.path, this.cfg.alwaysAllowPaths)) return;
      const d = await this.review(user, { nonResourceAttributes: { path: req.path, verb: req.verb } });
      if (!d.allowed) throw forbidden(user, { path: req.path, verb: req.verb }, d.reason);
      return;
    }
    if (req.proxy) return this.authorizeProxy(user, req.attrs.verb, req.proxy.cluster);
    const checks: ResourceAttributes[] = [req.attrs];
    if (req.view) checks.push(clusterAttributes(req.attrs.verb, req.view.cluster));
    return this.allowAll(user, checks);
  }

  /**
   * A request forwarded to a member as the user (apiserver/proxy/): the member's RBAC decides
   * the request itself; Panoptes decides whether the user may use the proxy to that member
   * at all, with the request's verb on clusters/proxy named after the member (as Karmada's
   * cluster proxy: clusters/proxy of cluster.karmada.io). Resolves when allowed, else 403.
   */
  async authorizeProxy(user: UserInfo, verb: string, cluster: string): Promise<void> {
    if (user.groups.some((g) => this.cfg.alwaysAllowGroups.includes(g))) return;
    return this.allowAll(user, [proxyAttributes(verb, cluster)]);
  }

  private async allowAll(user: UserInfo, checks: ResourceAttributes[]): Promise<void> {
    const decisions = await Promise.all(checks.map((a) => this.review(user, { resourceAttributes: a })));
    decisions.forEach((d, i) => {
      if (!d.allowed) throw forbidden(user, { resource: checks[i], verb: checks[i].verb }, d.reason);
    });
  }

  private async review(user: UserInfo, attrs: Pick<SubjectAccessReviewSpec, 'resourceAttributes' | 'nonResourceAttributes'>): Promise<Decision> {
    const spec: SubjectAccessReviewSpec = { user: user.name, groups: user.groups, ...attrs };
    if (user.uid) spec.uid = user.uid;
    if (Object.keys(user.extra).length) spec.extra = user.extra;
    const key = createHash('sha256').update(JSON.stringify(spec)).digest('hex');
    const cached = this.cache.get(key);
    if (cached) return cached;
    let res: SarStatus;
    try {
      res = await this.cfg.client.post<SarStatus>('/apis/authorization.k8s.io/v1/subjectaccessreviews', { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec });
    } catch (err) {
      this.log.warn('SubjectAccessReview failed', { err: err as Error });
      throw new StatusError('InternalError', `Internal error occurred: the authorization check could not be made: ${(err as Error).message}`);
    }
    const s = res.status ?? {};
    const d: Decision = { allowed: s.allowed === true && s.denied !== true, reason: s.reason ?? '' };
    if (s.evaluationError) this.log.debug('SubjectAccessReview evaluation error', { error: s.evaluationError });
    this.cache.set(key, d, d.allowed ? this.cfg.allowTtlMs : this.cfg.denyTtlMs);
    return d;
  }
}
