// Readiness of a member cluster: GET /readyz (or /healthz where /readyz is not served). A
// failed probe makes the cluster Unreachable, or Unauthorized (401: the member does not accept
// the credentials) or Forbidden (403: it accepts them but lets them read neither path), so the
// operator looks at credentials rather than networks.
import { HttpError, describeError, type ClusterClient } from '../../member/client.ts';

export interface ProbeResult {
  ready: boolean;
  /** Why not ready: ECONNREFUSED ..., HTTP 503 ..., timeout. */
  reason?: string;
  /** Which path answered. */
  path?: string;
  /** The HTTP status of a failed answer (401: the credentials are refused; 403: they may not read it). */
  status?: number;
}

/** Probes once; never throws. */
export async function probe(client: ClusterClient, timeoutMs = 5000, signal?: AbortSignal): Promise<ProbeResult> {
  for (const path of ['/readyz', '/healthz']) {
    try {
      const res = await client.stream(path, { timeoutMs, signal });
      res.resume();
      return { ready: true, path };
    } catch (err) {
      // Older or restricted servers: fall back to /healthz when /readyz is missing or forbidden (a 401 is the credentials, on any path).
      if (path === '/readyz' && err instanceof HttpError && (err.status === 404 || err.status === 403)) continue;
      return { ready: false, reason: describeError(err), path, ...(err instanceof HttpError ? { status: err.status } : {}) };
    }
  }
  return { ready: false, reason: 'no health endpoint answered' };
}

/** The phase a failed probe puts the cluster in (also its Ready condition's reason, but for Unreachable's ProbeFailed). */
export type ProbeFailure = 'Unreachable' | 'Unauthorized' | 'Forbidden';

/** What a failed probe says: its phase, the condition's reason and the message. */
export function probeFailure(r: ProbeResult): { phase: ProbeFailure; reason: string; message: string } {
  const what = `GET ${r.path ?? '/readyz'}: ${r.reason}`;
  if (r.status === 401) return { phase: 'Unauthorized', reason: 'Unauthorized', message: `${what}: the member does not accept the credentials (an expired or revoked token, a client certificate it does not trust): check them (status.credentials says where they come from)` };
  if (r.status === 403) return { phase: 'Forbidden', reason: 'Forbidden', message: `${what}: the member accepts the credentials but lets them read neither /readyz nor /healthz (kube's system:public-info-viewer, or the nonResourceURLs of manifests/member-cluster/reader.yaml)` };
  return { phase: 'Unreachable', reason: 'ProbeFailed', message: what };
}
