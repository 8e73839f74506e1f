// resourceVersion consistency of proxied writes, as the forwarder calls it: the body's
// resourceVersions translated from Panoptes' rv to the member's before forwarding, and the
// answer of a successful write settled (read-your-writes) after (write-consistency.ts).
import type { ResourceAttributes } from '../auth/attributes.ts';

/** A write to one member cluster: its request attributes and the cluster. */
export interface ProxiedWrite extends ResourceAttributes {
  cluster: string;
  /** `dryRun` asked for (query, or a DeleteOptions body): the member persists nothing, so there is nothing to wait for. */
  dryRun?: boolean;
}

export interface WriteConsistency {
  /** Rewrites the resourceVersions a write body carries (Panoptes rv -> the member rv of that version) and strips Panoptes' stamps; a malformed body is a 400 StatusError. */
  translateBody(w: ProxiedWrite, body: Buffer, contentType: string): Promise<Buffer>;
  /** After the member answered 2xx with `memberObject`: wait (bounded) for synchro to store it; returns the body to answer and warnings. */
  settle(w: ProxiedWrite, memberObject: unknown): Promise<{ object: unknown; warnings: string[] }>;
}
