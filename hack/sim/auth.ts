// Authentication and authorization of a simulated cluster. Off by default (anyone may do
// anything). Bearer tokens can be required (401 otherwise), and a token can be given a user
// name and RBAC-like rules: a resource request its rules do not allow is 403 Forbidden with
// kube-apiserver's message, e.g. `services is forbidden: User "panoptes" cannot create
// resource "services" in API group "" in the namespace "shop"`. Non-resource paths
// (discovery, OpenAPI, /version, health) stay open to every authenticated client, as
// kube's system:discovery and system:public-info-viewer roles make them, unless a user is
// given `nonResourceURLs` (RBAC's, for an operator who narrowed those roles): then any other
// path is kube's 403 `forbidden: User "u" cannot get path "/healthz"`. A bad token is kube's
// 401 on every path, health included (a Status, reason Unauthorized).
//
// Impersonation as kube-apiserver does it (k8s.io/apiserver/pkg/endpoints/filters/impersonation.go):
// Impersonate-User, Impersonate-Uid, Impersonate-Group (repeated) and Impersonate-Extra-<key>
// (key percent-decoded) need the caller to be allowed `impersonate` on users (name = the
// user; a service account's name: serviceaccounts in its namespace), groups (name = each group), uids and userextras/<key> (group
// authentication.k8s.io, name = each value); a refusal is kube's 403, e.g. `users "alice" is
// forbidden: User "panoptes" cannot impersonate resource "users" in API group "" at the cluster
// scope`. The request then runs as the impersonated user: the rules granted to that user name
// (`grant`), all rules for a member of system:masters, none for any other name once users are
// granted (an open simulated cluster stays open). Every impersonated request is recorded.
// Ref: k8s.io/apiserver/pkg/endpoints/request/requestinfo.go (verbs),
// k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go (forbiddenMessage),
// k8s.io/apimachinery/pkg/api/errors (NewForbidden).
import type { IncomingMessage } from 'node:http';
import { StatusError } from '../../kube/status.ts';

/** An RBAC PolicyRule, simplified: absent groups, resources or namespaces mean all; `*` matches anything. */
export interface SimRule {
  verbs: string[];
  /** API groups ("" is the core group). */
  apiGroups?: string[];
  /** Resources, or `resource/subresource` (`services/status`). */
  resources?: string[];
  /** Namespaces the rule applies in (cluster-scoped requests match only rules without namespaces). */
  namespaces?: string[];
}

/** Who a token is and what it may do. */
export interface SimUser {
  name: string;
  /** Absent: everything. */
  rules?: SimRule[];
  /** Non-resource paths it may request (RBAC's nonResourceURLs: `*` at the end matches a prefix); absent: every one. */
  nonResourceURLs?: string[];
}

/** An impersonated request as the simulated cluster saw it. */
export interface Impersonation {
  /** The authenticated caller ('' when the cluster is open and the token unknown). */
  caller: string;
  user: string;
  uid?: string;
  groups: string[];
  extra: Record<string, string[]>;
}

/** May impersonate anyone (Panoptes' role in manifests/member-cluster/). */
export const impersonatorRules: SimRule[] = [
  { verbs: ['impersonate'], apiGroups: [''], resources: ['users', 'groups', 'serviceaccounts'] },
  { verbs: ['impersonate'], apiGroups: ['authentication.k8s.io'], resources: ['uids', 'userextras/*'] },
];

/** A resource request's attributes, as kube's RequestInfo gives them to the authorizer. */
export interface RequestAttributes {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

export const readVerbs = ['get', 'list', 'watch'];
export const writeVerbs = ['create', 'update', 'patch', 'delete', 'deletecollection'];

/** A user who may read everything and write nothing. */
export const readOnlyUser = (name: string): SimUser => ({ name, rules: [{ verbs: readVerbs }] });

const matches = (list: string[] | undefined, value: string) => !list || list.includes('*') || list.includes(value);

/** Whether one rule allows a request (as RBAC's RuleAllows, simplified). */
export function ruleAllows(rule: SimRule, a: RequestAttributes): boolean {
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  if (!matches(rule.verbs, a.verb) || !matches(rule.apiGroups, a.group)) return false;
  if (
    rule.resources &&
    !rule.resources.includes('*') &&
    !rule.resources.includes(resource) &&
    !(a.subresource && (rule.resources.includes(`*/${a.subresource}`) || rule.resources.includes(`${a.resource}/*`)))
  ) {
    return false;
  }
  if (rule.namespaces) return a.namespace !== undefined && matches(rule.namespaces, a.namespace);
  return true;
}

/** kube-apiserver's 403: `<resource>[.group] ["name"] is forbidden: User "u" cannot <verb> resource "<resource>[/sub]" in API group "g" in the namespace "ns"`. */
export function forbidden(user: string, a: RequestAttributes): StatusError {
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const where = a.namespace ? `in the namespace ${JSON.stringify(a.namespace)}` : 'at the cluster scope';
  const reason = `User ${JSON.stringify(user)} cannot ${a.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(a.group)} ${where}`;
  const qualified = a.group ? `${a.resource}.${a.group}` : a.resource;
  const subject = a.name ? `${qualified} ${JSON.stringify(a.name)}` : qualified;
  return new StatusError('Forbidden', `${subject} is forbidden: ${reason}`, { ...(a.name ? { name: a.name } : {}), group: a.group, kind: a.resource });
}

/** kube-apiserver's 403 for a non-resource path (responsewriters.forbiddenMessage): `forbidden: User "u" cannot get path "/healthz"`. */
export function forbiddenPath(user: string, verb: string, path: string): StatusError {
  return new StatusError('Forbidden', `forbidden: User ${JSON.stringify(user)} cannot ${verb} path ${JSON.stringify(path)}`, {});
}

/** Whether a path is a non-resource request in kube's RequestInfo: not below /api/<version>/ or /apis/<group>/<version>/. */
export function isNonResourcePath(path: string): boolean {
  const segs = path.split('/').filter(Boolean);
  if (segs[0] === 'api') return segs.length <= 2;
  if (segs[0] === 'apis') return segs.length <= 3;
  return true;
}

/** The impersonation a request asks for (kube's headers), or undefined. */
function impersonationOf(req: IncomingMessage): Omit<Impersonation, 'caller'> | undefined {
  const h = req.headersDistinct;
  const user = h['impersonate-user']?.[0];
  const groups = h['impersonate-group'] ?? [];
  const uid = h['impersonate-uid']?.[0];
  const extra: Record<string, string[]> = {};
  for (const [name, values] of Object.entries(h)) {
    if (!name.startsWith('impersonate-extra-') || !values) continue;
    let key = name.slice('impersonate-extra-'.length);
    try {
      key = decodeURIComponent(key);
    } catch {
      throw new StatusError('BadRequest', `malformed impersonation extra key ${JSON.stringify(key)}`);
    }
    extra[key] = [...values];
  }
  if (user === undefined) {
    if (groups.length || uid !== undefined || Object.keys(extra).length) throw new StatusError('InternalError', 'Internal error occurred: requested impersonation without impersonating a user');
    return undefined;
  }
  return { user, groups: [...groups], extra, ...(uid !== undefined ? { uid } : {}) };
}

/** At most this many denied requests are remembered. */
const deniedKept = 1000;

export class SimAuth {
  /** Accepted bearer tokens; empty: no authentication (any token or none is accepted). */
  tokens: string[] = [];
  /** Who each token is and what it may do; a token listed here is always accepted. */
  readonly users = new Map<string, SimUser>();
  /** Every bearer token presented, in order (tests check which credentials a client used). */
  readonly seen: string[] = [];
  /** The last requests refused with 403, oldest first (at most 1000). */
  readonly denied: (RequestAttributes & { user: string })[] = [];

  /** Gives a token a user name and rules (absent rules: everything); `readOnlyUser(name)` may read only. */
  grant(token: string, user: SimUser): void {
    this.users.set(token, user);
  }

  /** The last impersonated requests, oldest first (at most 1000). */
  readonly impersonations: Impersonation[] = [];

  /**
   * Throws 401 Unauthorized unless the request carries an accepted token (or none are
   * required); returns who it is, if known: the impersonated user when the request asks for
   * impersonation and the caller may (403 otherwise).
   */
  check(req: IncomingMessage): SimUser | undefined {
    const header = req.headers.authorization ?? '';
    const token = header.startsWith('Bearer ') ? header.slice(7) : '';
    if (token && this.seen[this.seen.length - 1] !== token) this.seen.push(token);
    let user = this.users.get(token);
    if (!user && this.tokens.length && !this.tokens.includes(token)) throw new StatusError('Unauthorized', 'Unauthorized');
    const asked = impersonationOf(req);
    if (asked) user = this.impersonate(user, asked);
    return user;
  }

  private impersonate(caller: SimUser | undefined, asked: Omit<Impersonation, 'caller'>): SimUser | undefined {
    // A service account's user name is checked as the ServiceAccount object (kube's impersonation filter).
    const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(asked.user);
    const checks: RequestAttributes[] = [
      sa ? { verb: 'impersonate', group: '', resource: 'serviceaccounts', namespace: sa[1], name: sa[2] } : { verb: 'impersonate', group: '', resource: 'users', name: asked.user },
      ...asked.groups.map((g) => ({ verb: 'impersonate', group: '', resource: 'groups', name: g })),
      ...(asked.uid !== undefined ? [{ verb: 'impersonate', group: 'authentication.k8s.io', resource: 'uids', name: asked.uid }] : []),
      ...Object.entries(asked.extra).flatMap(([k, vs]) => vs.map((v) => ({ verb: 'impersonate', group: 'authentication.k8s.io', resource: 'userextras', subresource: k, name: v }))),
    ];
    for (const a of checks) this.authorize(caller, a);
    this.impersonations.push({ caller: caller?.name ?? '', ...asked });
    if (this.impersonations.length > deniedKept) this.impersonations.shift();
    if (asked.groups.includes('system:masters')) return { name: asked.user };
    const granted = [...this.users.values()].find((u) => u.name === asked.user);
    if (granted) return granted;
    return this.users.size || this.tokens.length ? { name: asked.user, rules: [] } : undefined;
  }

  /** Throws kube's 403 when the user is given nonResourceURLs and none matches the path. */
  authorizePath(user: SimUser | undefined, verb: string, path: string): void {
    const allowed = user?.nonResourceURLs;
    if (!allowed || allowed.some((u) => u === '*' || u === path || (u.endsWith('*') && path.startsWith(u.slice(0, -1))))) return;
    throw forbiddenPath(user.name, verb, path);
  }

  /** Throws 403 Forbidden when the user's rules do not allow the request. */
  authorize(user: SimUser | undefined, a: RequestAttributes): void {
    if (!user?.rules || user.rules.some((r) => ruleAllows(r, a))) return;
    this.denied.push({ ...a, user: user.name });
    if (this.denied.length > deniedKept) this.denied.shift();
    throw forbidden(user.name, a);
  }
}
