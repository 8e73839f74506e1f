// `kubectl top pods -A` (and `top nodes`) on the all-clusters view: metrics.k8s.io is not
// synced, so a list (or get) of PodMetrics or NodeMetrics there asks every Ready member
// through the proxy, as the user (each member under Panoptes' clusters/proxy review for it,
// then its own RBAC), and merges the answers; each item says its cluster in the annotation
// panoptes.io/cluster, as every object Panoptes serves. Members that are away, refuse or fail
// are left out and named in a Warning header. A get by name answers the one member that has
// it (a 400 naming the clusters when several do, as a get of the all-clusters view).
import type { MemberResponse } from '../../member/http2.ts';
import { readBounded } from '../../member/answer-size.ts';
import type { Context } from 'koa';
import { StatusError, badRequest, notFound } from '../../kube/status.ts';
import type { ResourceAttributes } from '../auth/attributes.ts';
import type { Deps, Reply } from '../endpoints/deps.ts';
import { proxyUser } from './forward.ts';
import { memberRequest } from './member-request.ts';
import { notReady } from './members.ts';

export const metricsGroup = 'metrics.k8s.io';

/** Whether a read of the all-clusters view is one the fleet fan-out answers. */
export const isFleetMetrics = (a: ResourceAttributes): boolean =>
  a.group === metricsGroup && a.version === 'v1beta1' && (a.resource === 'pods' || a.resource === 'nodes') && !a.subresource && (a.verb === 'list' || a.verb === 'get');

/** The largest answer read from one member. */
const maxAnswerBytes = 64 * 1024 * 1024;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

async function readJson(res: MemberResponse): Promise<unknown> {
  return JSON.parse((await readBounded(res, maxAnswerBytes)).toString('utf8'));
}

type Outcome = { cluster: string; items: Record<string, unknown>[] } | { cluster: string; away: string } | { cluster: string; refused: StatusError } | { cluster: string; failed: string };

/** `segments` and `query`: the Kubernetes path as the route checked it, sent to every member (member/client.ts memberRequestPath). */
export async function fleetMetrics(ctx: Context, deps: Deps, attrs: ResourceAttributes, segments: readonly string[], query: string): Promise<Reply> {
  const user = proxyUser(ctx, deps);
  const timeoutMs = Math.max(1000, Math.floor(deps.limits.requestTimeoutMs * 0.8));
  const outcomes = await Promise.all(
    deps.catalog.clusterNames().map(async (cluster): Promise<Outcome> => {
      const away = notReady(deps.catalog.cluster(cluster));
      if (away) return { cluster, away };
      try {
        const res = await memberRequest(deps, { cluster, user, verb: attrs.verb, method: 'GET', segments, query, headers: { accept: 'application/json', 'user-agent': ctx.get('User-Agent') }, timeoutMs });
        const body = await readJson(res);
        if (res.statusCode === 404 && attrs.name !== undefined) return { cluster, items: [] };
        if (res.statusCode !== 200 || !isRecord(body)) return { cluster, failed: `HTTP ${res.statusCode}` };
        const items = attrs.name !== undefined ? [body] : Array.isArray(body.items) ? body.items.filter(isRecord) : [];
        return { cluster, items };
      } catch (err) {
        if (err instanceof StatusError && err.reason === 'Forbidden') return { cluster, refused: err };
        if (err instanceof StatusError && err.reason === 'ServiceUnavailable') return { cluster, away: err.message };
        return { cluster, failed: (err as Error).message };
      }
    }),
  );
  const answered = outcomes.filter((o): o is Extract<Outcome, { items: unknown }> => 'items' in o);
  const refused = outcomes.filter((o): o is Extract<Outcome, { refused: unknown }> => 'refused' in o);
  if (answered.length === 0 && refused.length > 0) throw refused[0].refused; // allowed on no member at all
  const warnings: string[] = [];
  const away = outcomes.filter((o) => 'away' in o).map((o) => o.cluster);
  if (away.length) warnings.push(`members away, not in this answer: ${away.join(', ')}`);
  if (refused.length) warnings.push(`members you may not reach through the proxy, not in this answer: ${refused.map((o) => o.cluster).join(', ')}`);
  const failed = outcomes.filter((o): o is Extract<Outcome, { failed: unknown }> => 'failed' in o);
  if (failed.length) warnings.push(`members whose metrics could not be read, not in this answer: ${failed.map((o) => `${o.cluster} (${o.failed})`).join(', ')}`);
  const items = answered.flatMap((o) =>
    o.items.map((item) => {
      const md = isRecord(item.metadata) ? item.metadata : {};
      const annotations = isRecord(md.annotations) ? md.annotations : {};
      return { ...item, metadata: { ...md, annotations: { ...annotations, 'panoptes.io/cluster': o.cluster } } };
    }),
  );
  const kind = attrs.resource === 'pods' ? 'PodMetrics' : 'NodeMetrics';
  const headers = warnings.length ? { Warning: warnings.map((w) => `299 - ${JSON.stringify(w)}`) } : undefined;
  if (attrs.name !== undefined) {
    if (items.length === 0) throw notFound(`${attrs.resource}.${metricsGroup} "${attrs.name}" not found`, { name: attrs.name, group: metricsGroup, kind: attrs.resource });
    if (items.length > 1) throw badRequest(`${attrs.resource}.${metricsGroup} "${attrs.name}" exists in several clusters (${answered.filter((o) => o.items.length).map((o) => o.cluster).join(', ')}): ask one at .../resources/clusters/<cluster>/...`);
    return { type: 'application/json', body: JSON.stringify({ kind, apiVersion: `${metricsGroup}/v1beta1`, ...items[0] }), ...(headers ? { headers } : {}) };
  }
  return { type: 'application/json', body: JSON.stringify({ kind: `${kind}List`, apiVersion: `${metricsGroup}/v1beta1`, metadata: {}, items }), ...(headers ? { headers } : {}) };
}
