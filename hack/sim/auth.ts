// Authentication and authorization of a simulated cluster. Off by default (anyone may do
// anything). Bearer tokens can be required (401 otherwise), and a token can be given a user
// name and RBAC-like rules: a resource request its rules do not allow is 403 Forbidden with
// kube-apiserver's message, e.g. `services is forbidden: User "panoptes" cannot create
// resource "services" in API group "" in the namespace "shop"`. Non-resource paths
// (discovery, OpenAPI, /version, health) stay open to every authenticated client, as
// kube's system:discovery and system:public-info-viewer roles make them.
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
}

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

function allows(rule: SimRule, a: RequestAttributes): boolean {
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  if (!matches(rule.verbs, a.verb) || !matches(rule.apiGroups, a.group)) return false;
  if (rule.resources && !rule.resources.includes('*') && !rule.resources.includes(resource) && !(a.subresource && rule.resources.includes(`*/${a.subresource}`))) return false;
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

  /** Throws 401 Unauthorized unless the request carries an accepted token (or none are required); returns who it is, if known. */
  check(req: IncomingMessage): SimUser | undefined {
    const header = req.headers.authorization ?? '';
    const token = header.startsWith('Bearer ') ? header.slice(7) : '';
    if (token && this.seen[this.seen.length - 1] !== token) this.seen.push(token);
    const user = this.users.get(token);
    if (user) return user;
    if (this.tokens.length && !this.tokens.includes(token)) throw new StatusError('Unauthorized', 'Unauthorized');
    return undefined;
  }

  /** Throws 403 Forbidden when the user's rules do not allow the request. */
  authorize(user: SimUser | undefined, a: RequestAttributes): void {
    if (!user?.rules || user.rules.some((r) => allows(r, a))) return;
    this.denied.push({ ...a, user: user.name });
    if (this.denied.length > deniedKept) this.denied.shift();
    throw forbidden(user.name, a);
  }
}
