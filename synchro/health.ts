// Readiness of a member cluster: GET /readyz (or /healthz where /readyz is not served).
import { HttpError, describeError, type ClusterClient } from '../member/client.ts';

export interface ProbeResult {
  ready: boolean;
  /** Why not ready: ECONNREFUSED ..., HTTP 503 ..., timeout. */
  reason?: string;
  /** Which path answered. */
  path?: string;
}

/** Probes once; never throws. */
export async function probe(client: ClusterClient, timeoutMs = 5000, signal?: AbortSignal): Promise<ProbeResult> {
  for (const path of ['/readyz', '/healthz']) {
    try {
      const res = await client.stream(path, { timeoutMs, signal });
      res.resume();
      return { ready: true, path };
    } catch (err) {
      // Older or restricted servers: fall back to /healthz when /readyz is missing or forbidden.
      if (path === '/readyz' && err instanceof HttpError && (err.status === 404 || err.status === 403 || err.status === 401)) continue;
      return { ready: false, reason: describeError(err), path };
    }
  }
  return { ready: false, reason: 'no health endpoint answered' };
}
