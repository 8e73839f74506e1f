// The dispatcher's one failure policy, per consumer: what a failed write to a consumer means,
// and how long the key (or the consumer) waits before it is written again.
//
// A failure is the key's own unless it is provably about the dispatcher's identity there:
//   - 401: the consumer refuses its credentials: nothing is written to that consumer for a
//     backoff (forbiddenBackoff);
//   - 403 that a SelfSubjectAccessReview confirms (the identity may not make that request:
//     verb, resource, namespace): nothing is written in that namespace of that consumer for a
//     backoff, and the status says which right is missing;
//   - any other failure — a 403 the review does not confirm (admission: a Terminating
//     namespace, a full ResourceQuota, a LimitRange, a policy webhook), 404, 422, 5xx, 429,
//     timeouts, an unreachable member, or a review that cannot be made — is the key's: that key
//     waits out a backoff of its own (errorBackoff) in that consumer, every other key goes on,
//     and the key's status names its own object's error and nothing of anyone else's.
// A key's record ends with its first batch that writes without a failure; an identity block
// ends with its backoff (the next write shows whether the right is there now).
import { Backoff, type BackoffOptions } from '../../lib/backoff.ts';
import { describeError, HttpError, type WritableClusterClient } from '../../member/client.ts';
import { keyString, type ServiceKey } from './desired.ts';
import type { Kind } from './ownership.ts';
import type { Reason } from './status.ts';
import { MemberRequestError } from './writer.ts';

/** The resource of each kind, as RBAC and the SelfSubjectAccessReview name it. */
const resourceOf: Record<Kind, { group: string; resource: string }> = {
  Service: { group: '', resource: 'services' },
  EndpointSlice: { group: 'discovery.k8s.io', resource: 'endpointslices' },
  ServiceImport: { group: 'multicluster.x-k8s.io', resource: 'serviceimports' },
};

/** Where a consumer waits: the key's own record, or a block of the identity (the whole consumer, or a namespace of it). */
export interface Waiting {
  reason: Reason;
  /** performance.now() when writes may start again. */
  until: number;
  /** The identity is refused (the consumer's status shows `blocked`), rather than the key's own failure. */
  identity: boolean;
}

interface KeyRecord {
  backoff: Backoff;
  until: number;
  reason: Reason;
  /** When the run of failures began (RFC 3339). */
  since: string;
}

const statusText = (err: HttpError) => `${err.message}${err.statusMessage ? `: ${err.statusMessage}` : ''}`;

/** Why the SelfSubjectAccessReview answered as it did, or undefined when it could not be made. */
type Review = { allowed: boolean } | undefined;

export class ConsumerFailures {
  private readonly keys = new Map<string, KeyRecord>();
  /** Identity blocks: '' for the whole consumer (401), a namespace for a 403 a review confirmed. */
  private readonly identity = new Map<string, { until: number; reason: Reason }>();
  private readonly identityBackoff: Backoff;

  constructor(
    private readonly cluster: string,
    private readonly opts: { forbiddenBackoff: BackoffOptions; errorBackoff: BackoffOptions },
  ) {
    this.identityBackoff = new Backoff({ ...opts.forbiddenBackoff, jitter: 0.2 });
  }

  /** Whether writes of `key` wait now, and why. */
  waiting(key: ServiceKey, now = performance.now()): Waiting | undefined {
    for (const scope of ['', key.namespace]) {
      const b = this.identity.get(scope);
      if (b && now < b.until) return { reason: b.reason, until: b.until, identity: true };
    }
    const r = this.keys.get(keyString(key));
    if (r && now < r.until) return { reason: r.reason, until: r.until, identity: false };
    return undefined;
  }

  /** Since when `key`'s writes keep failing here (RFC 3339), if they do. */
  failingSince(key: ServiceKey): string | undefined {
    return this.keys.get(keyString(key))?.since;
  }

  /** `key`'s batch wrote without a failure: its record goes (and the identity is fine where it wrote). */
  succeeded(key: ServiceKey): void {
    this.keys.delete(keyString(key));
    this.identity.delete(key.namespace);
    if (this.identity.size === 0) this.identityBackoff.reset();
  }

  /**
   * What a failed write of `key` means (see the module comment): recorded, and returned with
   * when writes may start again. A 403 is checked with a SelfSubjectAccessReview through `client`.
   */
  async failed(key: ServiceKey, err: unknown, client: WritableClusterClient, signal: AbortSignal, timeoutMs: number): Promise<Waiting> {
    const req = err instanceof MemberRequestError ? err : undefined;
    const cause = req ? req.cause : err;
    const what = req ? `${req.kind} ${key.namespace}/${req.objectName} in cluster ${this.cluster}` : `${keyString(key)} in cluster ${this.cluster}`;
    const now = performance.now();
    if (cause instanceof HttpError && cause.status === 401) {
      const reason = { reason: 'Unauthorized', message: `cluster ${this.cluster} refuses the dispatcher's credentials (${statusText(cause)}): nothing is written there until they are accepted` };
      return this.block('', reason, now);
    }
    if (cause instanceof HttpError && cause.status === 403 && req) {
      const r = resourceOf[req.kind];
      const review = await this.review(client, { verb: req.verb, ...r, namespace: key.namespace, ...(req.subresource ? { subresource: req.subresource } : {}) }, signal, timeoutMs);
      if (review && !review.allowed) {
        const right = `${req.verb} ${r.resource}${req.subresource ? `/${req.subresource}` : ''}${r.group ? `.${r.group}` : ''} in namespace ${key.namespace}`;
        const reason = {
          reason: 'Forbidden',
          message: `the dispatcher's identity in cluster ${this.cluster} may not ${right} (${statusText(cause)}; confirmed by a SelfSubjectAccessReview): give it the role of manifests/member-cluster/dispatcher/`,
        };
        return this.block(key.namespace, reason, now);
      }
    }
    // A create in a namespace the consumer does not have: kube's NamespaceLifecycle admission
    // answers 404 `namespaces "<ns>" not found` (any other 404, e.g. a CRD gone, is what it says).
    const noNamespace = cause instanceof HttpError && cause.status === 404 && req?.verb === 'create' && cause.statusMessage === `namespaces "${key.namespace}" not found`;
    const reason: Reason =
      cause instanceof HttpError
        ? { reason: noNamespace ? 'NamespaceNotFound' : (cause.reason ?? `HTTP${cause.status}`), message: `writing ${what}: ${statusText(cause)}` }
        : { reason: 'WriteFailed', message: `writing ${what}: ${describeError(cause)}` };
    const k = keyString(key);
    const rec = this.keys.get(k) ?? { backoff: new Backoff({ ...this.opts.errorBackoff, jitter: 0.2 }), until: 0, reason, since: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') };
    rec.reason = reason;
    rec.until = now + rec.backoff.next();
    this.keys.set(k, rec);
    return { reason, until: rec.until, identity: false };
  }

  private block(scope: string, reason: Reason, now: number): Waiting {
    const until = now + this.identityBackoff.next();
    this.identity.set(scope, { until, reason });
    return { reason, until, identity: true };
  }

  /** A SelfSubjectAccessReview of the request that failed (undefined: it could not be made, so nothing is proven). */
  private async review(client: WritableClusterClient, attrs: Record<string, string>, signal: AbortSignal, timeoutMs: number): Promise<Review> {
    try {
      const res = await client.create<{ status?: { allowed?: boolean } }>(
        '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
        { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: attrs } },
        { timeoutMs, signal },
      );
      return { allowed: res.status?.allowed === true };
    } catch {
      return undefined;
    }
  }
}
