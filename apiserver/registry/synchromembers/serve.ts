// `synchromembers.panoptes.io` (kind SynchroMember, cluster-scoped, short name `members`): the
// synchro processes as storage has them (storage/members.ts), so that `kubectl get members`
// shows the fleet, each member's state and the configuration error it reports. A read-only
// view computed at each request, as kube-apiserver serves componentstatuses: get and list
// only, no resourceVersion of its own (nothing to watch from: `?watch` is a 405, as kube
// answers a resource without a watcher), every write a 405. One object per member row:
//   metadata.name          the member's identity (--identity: letters, digits and - _ . : @;
//                          the default identity `<host>_<uuid>` is not a DNS name, so names
//                          are served as they are: a path segment holds them);
//   metadata.creationTimestamp  when the process instance holding the row started;
//   status.state           Live, Out or Expired (storage/members.ts memberState, as /metrics);
//   status.clusters        the member clusters whose lease it holds (unexpired `cluster/<name>`).
// Served at the server root and in every view (the same objects: they belong to the fleet);
// authorized as any request, as a get or list of synchromembers.
import type { Context } from 'koa';
import { matchesFields } from '../../../kube/fields.ts';
import { matchesLabels } from '../../../kube/labels.ts';
import { queryBool } from '../../../kube/query.ts';
import { StatusError, badRequest, notFound } from '../../../kube/status.ts';
import { partialObjectMetadataListJson, toPartialObjectMetadata } from '../../../kube/table.ts';
import { jsonFieldsMatch } from '../../../storage/json-fields.ts';
import { clusterLease } from '../../../storage/leases.ts';
import { memberState, type Member } from '../../../storage/members.ts';
import type { KubeObject } from '../../../storage/types.ts';
import type { Deps, Reply } from '../../endpoints/deps.ts';
import { pathNotFound } from '../../endpoints/errors.ts';
import { negotiateOutput } from '../../endpoints/negotiate.ts';
import { writeVerbOf } from '../generic/own-writes.ts';
import { panoptesApiVersion, panoptesGroupName } from '../../discovery/panoptes-group.ts';
import { synchroMembersInfo as info } from './info.ts';
import { parseListParams } from '../../read/params.ts';
import type { MetricLabels, Routed } from '../../endpoints/routed.ts';
import { tableJson, tableRenderer, tableRowJson } from '../../read/table.ts';

const qualified = `${info.resource}.${panoptesGroupName}`;

/** A synchro members path below /apis/panoptes.io/v1alpha1/: [watch/]synchromembers[/...] (the handler checks the rest). */
export function synchroMembersPath(segs: string[]): { rest: string[]; legacyWatch: boolean } | undefined {
  const legacyWatch = segs[0] === 'watch';
  const s = legacyWatch ? segs.slice(1) : segs;
  return s[0] === info.resource ? { rest: s.slice(1), legacyWatch } : undefined;
}

/** kube's metav1.MicroTime form (six fraction digits), as a Lease's renewTime. */
const microTime = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
/** kube's metav1.Time form (seconds). */
const time = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

const states = { live: 'Live', out: 'Out', expired: 'Expired' } as const;

/** One member row as a SynchroMember. */
export function synchroMemberObject(m: Member, now: number, clusters: string[]): KubeObject {
  return {
    kind: info.kind,
    apiVersion: panoptesApiVersion,
    metadata: { name: m.id, creationTimestamp: time(m.startedAt) },
    status: {
      state: states[memberState(m, now)],
      host: m.host,
      pid: m.pid,
      ...(m.instance !== null ? { instance: m.instance } : {}),
      heartbeatTime: microTime(m.heartbeatAt),
      expiresTime: microTime(m.expiresAt),
      ...(m.configError !== null ? { configError: m.configError } : {}),
      clusters,
    },
  };
}

/** Every member row with the clusters it holds, against the database's clock. */
async function readMembers(deps: Deps): Promise<{ now: number; objects: KubeObject[] }> {
  const [{ now, members }, leases] = await Promise.all([deps.store.members(), deps.store.listLeases()]);
  const prefix = clusterLease('');
  const held = new Map<string, string[]>();
  for (const l of leases) {
    if (l.holder === null || !l.name.startsWith(prefix) || l.expiresAt <= now) continue;
    held.set(l.holder, [...(held.get(l.holder) ?? []), l.name.slice(prefix.length)]);
  }
  return { now, objects: members.map((m) => synchroMemberObject(m, now, (held.get(m.id) ?? []).sort())) };
}

function label(ctx: Context, verb: MetricLabels['verb']): void {
  (ctx.state as { metric?: MetricLabels }).metric = { verb, group: panoptesGroupName, resource: info.resource };
}

/** Serves a synchro members path (see the header comment). */
export async function serveSynchroMembers(ctx: Context, deps: Deps, path: { rest: string[]; legacyWatch: boolean }): Promise<Routed> {
  // Neither the legacy /watch/ form nor any subresource is served (kube registers no route for them).
  if (path.legacyWatch || path.rest.length > 1) throw pathNotFound();
  const name = path.rest[0];
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
    label(ctx, writeVerbOf(ctx.method) ?? 'other');
    throw new StatusError('MethodNotAllowed', `the server does not allow this method on the requested resource: ${ctx.method} (${qualified} are read-only: get and list)`, { group: panoptesGroupName, kind: info.resource });
  }
  const qs = new URLSearchParams(ctx.querystring);
  const w = qs.get('watch');
  if (w !== null && queryBool(w)) {
    label(ctx, 'watch');
    throw new StatusError('MethodNotAllowed', `watch is not supported on resources of kind "${qualified}"`, { group: panoptesGroupName, kind: info.resource });
  }
  const verb = name === undefined ? 'list' : 'get';
  label(ctx, verb);
  const params = parseListParams(qs, verb, info, deps.limits);
  const other = Object.keys(params.search).filter((k) => k !== 'names');
  if (other.length) throw badRequest(`the search parameters ${other.join(', ')} do not apply to ${qualified}: its objects are the synchro processes (names applies)`);
  const output = negotiateOutput(ctx.get('Accept'), verb, qs.get('includeObject') ?? undefined);
  const { now, objects } = await readMembers(deps);
  const names = params.search.names;
  const chosen = objects.filter(
    (o) =>
      (name === undefined || o.metadata?.name === name) &&
      (names === undefined || names.includes(o.metadata?.name ?? '')) &&
      matchesLabels(params.labelSelector, o.metadata?.labels) &&
      matchesFields(params.fieldSelector, info.group, info.resource, o) &&
      jsonFieldsMatch(params.jsonFields, o),
  );
  if (name !== undefined && chosen.length === 0) throw notFound(`${qualified} "${name}" not found`, { name, group: panoptesGroupName, kind: info.resource });
  return { reply: render(chosen, verb, output, now) };
}

function render(objects: KubeObject[], verb: 'get' | 'list', output: ReturnType<typeof negotiateOutput>, now: number): Reply {
  const listMeta = { resourceVersion: '' };
  const reply = (body: string): Reply => ({ type: output.contentType, body });
  if (output.kind === 'table') {
    const r = tableRenderer(info, {});
    return reply(tableJson(r, output.metaVersion, listMeta, objects.map((o) => tableRowJson(r, info, o, JSON.stringify(o), '', output, now))));
  }
  if (verb === 'get') return reply(JSON.stringify(output.kind === 'partial' ? toPartialObjectMetadata(objects[0], output.metaVersion) : objects[0]));
  if (output.kind === 'partial') return reply(partialObjectMetadataListJson(objects, output.metaVersion, listMeta));
  return reply(JSON.stringify({ kind: `${info.kind}List`, apiVersion: panoptesApiVersion, metadata: listMeta, items: objects }));
}
