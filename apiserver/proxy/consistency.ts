// resourceVersion consistency of proxied writes, as the forwarder calls it: the body's
// metadata.resourceVersion translated from Panoptes' rv to the member's before forwarding,
// and the answer of a successful write settled (read-your-writes) after. Until a translating
// implementation is given, writes pass through unchanged.
export interface ProxiedWrite {
  cluster: string;
  group: string;
  version: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
  verb: string;
  /** `dryRun` asked for (query, or a DeleteOptions body): the member persists nothing, so there is nothing to wait for. */
  dryRun?: boolean;
}

export interface WriteConsistency {
  /** Rewrites the resourceVersions a write body carries (Panoptes rv -> the member rv of that version) and strips Panoptes' stamps; a malformed body is a 400 StatusError. */
  translateBody(w: ProxiedWrite, body: Buffer, contentType: string): Promise<Buffer>;
  /** After the member answered 2xx with `memberObject`: wait (bounded) for synchro to store it; returns the body to answer and warnings. */
  settle(w: ProxiedWrite, memberObject: unknown): Promise<{ object: unknown; warnings: string[] }>;
}
