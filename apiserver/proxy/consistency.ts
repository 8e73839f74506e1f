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
}

export interface WriteConsistency {
  /** Rewrites metadata.resourceVersion (Panoptes rv -> member rv) in a JSON body; throws a 409 StatusError when stale. */
  translateBody(w: ProxiedWrite, body: Buffer, contentType: string): Promise<Buffer>;
  /** After the member answered 2xx with `memberObject`: wait (bounded) for synchro to store it; returns the body to answer and warnings. */
  settle(w: ProxiedWrite, memberObject: unknown): Promise<{ object: unknown; warnings: string[] }>;
}

/** Bodies and answers as they are. */
export const passThroughConsistency: WriteConsistency = {
  translateBody: async (_w, body) => body,
  settle: async (_w, object) => ({ object, warnings: [] }),
};
