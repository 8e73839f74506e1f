// What the proxy to member clusters needs from the server.
import type { UserInfo } from '../auth/authn.ts';
import type { WriteConsistency } from './consistency.ts';
import type { MemberPool } from './members.ts';

export interface ProxyDeps {
  /** Member endpoints, pooled per member. */
  members: MemberPool;
  /** resourceVersion translation and read-your-writes of proxied writes. */
  consistency: WriteConsistency;
  /** Panoptes' own check on clusters/proxy (absent in the development mode, which authorizes nothing). */
  authorizer?: { authorizeProxy(user: UserInfo, verb: string, cluster: string): Promise<void> };
  /**
   * Development mode only (no authentication): the user proxied requests impersonate, named
   * by the operator (--insecure-proxy-user). Absent: proxied requests are refused (403).
   */
  unauthenticatedUser?: UserInfo;
}
