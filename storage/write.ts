// The write path: one synchro batch becomes one transaction that updates `objects`,
// their label and field index rows, and appends `changes` with rvs in commit order: the locks
// and fences, the stored rows of the keys touched, the decisions, the rvs (storage/fenced.ts:
// under the rv lock, or allocated in parallel with other writers, storage/ordered-commits.ts),
// then every row written (dialect.writeBatch: one statement on PostgreSQL), then commit.
import type { Knex } from 'knex';
import { traceMark, tracing, wallNow } from '../lib/trace.ts';
import { kindFieldNames, kindFieldValues } from '../kube/fields.ts';
import { stringifyJson } from '../kube/json-text.ts';
import { alreadyApplied, decide, stateAfter, type Decision, type IncomingEvent, type StoredState } from './decide.ts';
import type { Dialect } from './dialect.ts';
import type { BatchRows } from './batch-rows.ts';
import { labelNumber } from './label-number.ts';
import { readMeta } from './meta.ts';
import { fenceOf, writeTransaction, type RvLocks } from './fenced.ts';
import { clusterLease, type Fence } from './leases.ts';
import { keyOf, ownerUid, toChange, type ChangeRowValues, type ObjectRow } from './rows.ts';
import { checkIdentity, labelIndexKey, labelIndexValue, sqlDocument, sqlText } from './sql-values.ts';
import type { BatchResult, Change, KubeObject, ObjectKey, UpstreamEvent } from './types.ts';

export const clusterAnnotation = 'panoptes.io/cluster';
export const upstreamRvAnnotation = 'panoptes.io/upstream-resource-version';
/** The annotations storage stamps on every stored object: Panoptes' alone, never a member's (synchro drops them on the way in, the proxy from write bodies on the way out). */
export const stampedAnnotations: readonly string[] = [clusterAnnotation, upstreamRvAnnotation];

export interface WriteOptions {
  /** Runs inside the transaction after all rows are written, just before commit (tests). */
  beforeCommit?: () => Promise<void>;
  /**
   * Read the stored rows under the rv lock even when the fences would allow reading them
   * before: a retry after a failure whose commit may still land (an answer lost with its
   * connection), which only a read after that transaction's lock is released sees.
   */
  readUnderLock?: boolean;
}

/** A key's state while a batch is applied: what storage holds, with its served JSON and rv. */
interface Held extends StoredState {
  json: string;
  rv: number;
}

/** A key of a batch: group, resource, namespace and name (the cluster is its part's). */
interface KeyRef {
  group: string;
  resource: string;
  namespace: string;
  name: string;
}

/** One change decided, before it has its rv: its place in the write (its rv is the first allocated + index). */
interface Planned extends KeyRef {
  index: number;
  d: Decision;
  cluster: string;
  /** The lease epoch of the writer (null: written without a lease). */
  epoch: number | null;
  /** The object as served before it: the index of the change before it in this write, the stored text, or null when it did not exist. */
  prev: number | string | null;
}

/** A planned change with its rv: the object as served, and its text. */
interface Served {
  rv: number;
  object: KubeObject;
  json: string;
}

function stamp(obj: KubeObject, rv: number, cluster: string, upstreamRv: string): KubeObject {
  const md = obj.metadata ?? {};
  return {
    ...obj,
    metadata: {
      ...md,
      resourceVersion: String(rv),
      annotations: { ...md.annotations, [clusterAnnotation]: cluster, [upstreamRvAnnotation]: upstreamRv },
    },
  };
}

/** The kind's selectable fields as JSON (as SQL compares them: storage/sql-values.ts), or null for kinds without any. */
function fieldsJson(group: string, resource: string, obj: KubeObject): string | null {
  if (kindFieldNames(group, resource).length === 0) return null;
  const values = kindFieldValues(group, resource, obj);
  for (const k of Object.keys(values)) values[k] = sqlText(values[k]);
  return JSON.stringify(values);
}

const nullableSqlText = (s: string | null): string | null => (s === null ? null : sqlText(s));

function sameRecord(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && a[k] === b[k]);
}

function describe(cluster: string, e: UpstreamEvent): { e: UpstreamEvent; namespace: string; name: string; incoming: IncomingEvent } {
  const md = e.object.metadata ?? {};
  if (!md.name) throw new Error(`event ${e.type} ${e.group}/${e.resource} has no metadata.name`);
  const incoming: IncomingEvent = { type: e.type, version: e.version, uid: md.uid ?? '', upstreamRv: md.resourceVersion ?? '', object: e.object };
  const namespace = md.namespace ?? '';
  checkIdentity({ cluster, group: e.group, version: e.version, resource: e.resource, namespace, name: md.name, uid: incoming.uid, upstreamRv: incoming.upstreamRv }, { stores: e.type !== 'DELETED' });
  return { e, namespace, name: md.name, incoming };
}

/** What storage holds for every key the parts touch, by cluster: one statement for the whole group commit (storage/dialect.ts selectObjectsByKeys). */
async function loadStored(trx: Knex.Transaction, dialect: Dialect, parts: Array<{ cluster: string; keys: Array<{ e: { group: string; resource: string }; namespace: string; name: string }> }>): Promise<Map<string, ObjectRow[]>> {
  const keys = new Map<string, ObjectKey>();
  for (const { cluster, keys: ks } of parts)
    for (const k of ks) keys.set(`${cluster}\u0000${keyOf(k.e.group, k.e.resource, k.namespace, k.name)}`, { cluster, group: k.e.group, resource: k.e.resource, namespace: k.namespace, name: k.name });
  const byCluster = new Map<string, ObjectRow[]>();
  if (keys.size === 0) return byCluster;
  for (const r of await dialect.selectObjectsByKeys<ObjectRow>(trx, 'o.id, o.cluster, o.grp, o.version, o.resource, o.namespace, o.name, o.uid, o.rv, o.upstream_rv, o.object', [...keys.values()])) {
    const rows = byCluster.get(r.cluster);
    if (rows) rows.push(r);
    else byCluster.set(r.cluster, [r]);
  }
  return byCluster;
}

/** One cluster's share of a group commit. */
export interface BatchPart {
  cluster: string;
  events: UpstreamEvent[];
  /** The writer's lease for this cluster: checked in the transaction (FencedError if it moved on). */
  fence?: Fence;
}

/** One cluster's batch in one transaction, without a lease (applyBatches with one unfenced part). */
export async function applyBatch(knex: Knex, dialect: Dialect, cluster: string, events: UpstreamEvent[], opts: WriteOptions = {}): Promise<BatchResult> {
  const [result] = (await applyBatchesCommitted(knex, dialect, [{ cluster, events }], opts)).results;
  return result;
}

/**
 * Group commit: the batches of several clusters in one transaction, one rv range, in part
 * order. Every part's fence is checked first; a FencedError (its `fence` names the part)
 * writes nothing of any part, and the caller retries without the fenced one. Returns one
 * result per part; each part's changes are in rv order and the watermark is the batch's.
 */
export async function applyBatches(knex: Knex, dialect: Dialect, parts: BatchPart[], opts: WriteOptions = {}): Promise<BatchResult[]> {
  return (await applyBatchesCommitted(knex, dialect, parts, opts)).results;
}

/**
 * applyBatches, with the changes it committed, in rv order, as the change log holds them: the
 * Store hands them to this process's watch engine, which then has them without reading the
 * log (storage/store.ts onCommit).
 */
export async function applyBatchesCommitted(knex: Knex, dialect: Dialect, parts: BatchPart[], opts: WriteOptions = {}): Promise<{ results: BatchResult[]; committed: Change[] }> {
  if (new Set(parts.map((p) => p.cluster)).size !== parts.length) throw new Error('applyBatches: one part per cluster');
  const described = parts.map((p) => p.events.map((e) => describe(p.cluster, e)));
  const fences = parts.flatMap((p) => (p.fence ? [fenceOf(p.fence, clusterLease(p.cluster))] : []));
  let rows: ChangeRowValues[] = [];
  const keysOfParts = () => parts.map((p, i) => ({ cluster: p.cluster, keys: described[i] }));
  // What storage holds for the parts' keys is read before the rv lock on PostgreSQL when every
  // part is written under its cluster's lease: only that lease's holder writes a cluster's
  // objects, a holder's earlier rounds committed before this one began (one committer per
  // process), and a lease taken over in between moves its epoch on, so the fences checked under
  // the lock refuse the whole round (nothing written) whenever the rows read could be stale. The
  // serialized section loses a round trip. Unleased writes (tests, tools) and retries of a round
  // whose commit may have landed after all (WriteOptions.readUnderLock) read under the lock.
  let preread: Map<string, ObjectRow[]> | undefined;
  const early = dialect.name === 'postgres' && !opts.readUnderLock && parts.length > 0 && parts.every((p) => p.fence !== undefined);
  const prelude = early ? async (trx: Knex.Transaction) => void (preread = await loadStored(trx, dialect, keysOfParts())) : undefined;
  // The same writes may run in parallel with other writers' (a parallel PostgreSQL database:
  // storage/ordered-commits.ts): their rvs are allocated once the changes are decided, and
  // published after the rows are written. A retry, and an unleased write, run alone.
  let held: RvLocks | undefined;
  const results = await writeTransaction(knex, dialect, fences, early ? 'ordered' : 'rv', async (trx, locked) => {
    held = locked;

    // Each event decided against its key's state so far (what storage holds, then the
    // decisions before it); the changes are numbered in order, and get their rvs below.
    const planned: Planned[] = [];
    const perPart: Planned[][] = [];
    const finals: Array<{ cluster: string; ref: KeyRef; before?: { id: number; held: Held }; after: number | null }> = [];
    const stored = preread ?? (await loadStored(trx, dialect, keysOfParts()));
    for (const [i, part] of parts.entries()) {
      const { cluster } = part;
      // What storage holds for every key the part touches (read for the whole round above).
      const original = new Map<string, { id: number; held: Held }>();
      for (const r of stored.get(cluster) ?? []) {
        const object = JSON.parse(r.object) as KubeObject;
        const held: Held = { uid: r.uid, upstreamRv: r.upstream_rv, version: r.version, object, json: r.object, rv: Number(r.rv) };
        original.set(keyOf(r.grp, r.resource, r.namespace, r.name), { id: Number(r.id), held });
      }
      // The key's state: what storage holds, or the index of the last change planned for it (null: deleted).
      const state = new Map<string, StoredState | null>();
      const lastOf = new Map<string, number>();
      const touched = new Map<string, KeyRef>();
      const mine: Planned[] = [];
      // A replayed run (a round retried after a commit whose answer was lost) with opaque upstream rvs.
      const replayed = alreadyApplied(described[i].map((d) => ({ key: keyOf(d.e.group, d.e.resource, d.namespace, d.name), incoming: d.incoming })), (key) => original.get(key)?.held ?? null);
      for (const [j, { e, namespace, name, incoming }] of described[i].entries()) {
        if (replayed.has(j)) continue;
        const key = keyOf(e.group, e.resource, namespace, name);
        let cur = state.has(key) ? state.get(key)! : (original.get(key)?.held ?? null);
        const decisions = decide(cur, incoming);
        if (decisions.length === 0) continue;
        for (const d of decisions) {
          const prev = cur === null ? null : (lastOf.get(key) ?? original.get(key)!.held.json);
          const p: Planned = { index: planned.length, d, cluster, epoch: part.fence?.epoch ?? null, group: e.group, resource: e.resource, namespace, name, prev };
          planned.push(p);
          mine.push(p);
          lastOf.set(key, p.index);
          cur = stateAfter(d, d.object);
        }
        state.set(key, cur);
        touched.set(key, { group: e.group, resource: e.resource, namespace, name });
      }
      perPart.push(mine);
      for (const [key, ref] of touched) finals.push({ cluster, ref, before: original.get(key), after: state.get(key) === null ? null : lastOf.get(key)! });
    }

    const results = (first: number, watermark: number): BatchResult[] =>
      perPart.map((mine) => ({
        changes: mine.map((p) => ({ rv: first + p.index, type: p.d.type, cluster: p.cluster, group: p.group, resource: p.resource, namespace: p.namespace, name: p.name })),
        watermark,
        lockWaitMs: locked.lockWaitMs,
        heldMs: 0,
      }));
    // Nothing to write (replays): no rv, the fences checked all the same, and the watermark as it is.
    if (planned.length === 0) {
      await locked.allocate(0);
      return results(Number.NaN, locked.movesWatermark ? locked.rv : (await readMeta(trx)).rv);
    }

    // The rvs: at once when the write runs alone; else allocated now (ordered-commits.ts).
    const first = await locked.allocate(planned.length);
    const last = first + planned.length - 1;
    if (tracing) {
      traceMark('locked', first, last, locked.lockedAt);
      traceMark('decided', first, last);
    }
    // Each change served with its rv; its prev is the key's object as served just before.
    const served: Served[] = planned.map((p) => {
      const rv = first + p.index;
      const object = stamp(p.d.object, rv, p.cluster, p.d.upstreamRv);
      return { rv, object, json: stringifyJson(object) };
    });
    const ts = locked.now;
    rows = planned.map((p) => ({
      rv: served[p.index].rv,
      type: p.d.type,
      cluster: p.cluster,
      grp: p.group,
      version: p.d.version,
      resource: p.resource,
      namespace: p.namespace,
      name: p.name,
      uid: p.d.uid,
      object: served[p.index].json,
      prev_object: typeof p.prev === 'number' ? served[p.prev].json : p.prev,
      ts,
      epoch: p.epoch,
    }));

    // The keys' final states as rows: upserted, deleted, and their label rows rewritten when the labels changed.
    const upserts: Array<Omit<ObjectRow, 'id'>> = [];
    const deleteIds: number[] = [];
    const relabel: BatchRows['relabel'] = [];
    const counts = new Map<string, { cluster: string; grp: string; resource: string; namespace: string; n: number }>();
    const count = (cluster: string, ref: KeyRef, delta: number) => {
      const k = `${cluster}\u0000${ref.group}\u0000${ref.resource}\u0000${ref.namespace}`;
      const c = counts.get(k) ?? { cluster, grp: ref.group, resource: ref.resource, namespace: ref.namespace, n: 0 };
      c.n += delta;
      counts.set(k, c);
    };
    for (const { cluster, ref, before, after } of finals) {
      if (after === null) {
        if (before) {
          deleteIds.push(before.id);
          count(cluster, ref, -1);
        }
        continue;
      }
      if (!before) count(cluster, ref, 1);
      const { d } = planned[after];
      const { object, json, rv } = served[after];
      const md = object.metadata ?? {};
      upserts.push({
        cluster,
        grp: ref.group,
        version: d.version,
        resource: ref.resource,
        namespace: ref.namespace,
        name: ref.name,
        uid: d.uid,
        rv,
        upstream_rv: d.upstreamRv,
        created_at: sqlText(md.creationTimestamp ?? ''),
        owner_uid: nullableSqlText(ownerUid(object)),
        fields: fieldsJson(ref.group, ref.resource, object),
        object: json,
        json_doc: sqlDocument(object, json),
      });
      const labels = md.labels ?? {};
      if (before && sameRecord(before.held.object.metadata?.labels ?? {}, labels)) continue;
      relabel.push({
        object: { cluster, grp: ref.group, resource: ref.resource, namespace: ref.namespace, name: ref.name },
        ...(before ? { id: before.id } : {}),
        labels: Object.entries(labels).map(([k, v]) => ({ key: labelIndexKey(k), value: labelIndexValue(String(v)), num: labelNumber(String(v)) })),
      });
    }

    await dialect.writeBatch(trx, {
      upserts,
      deleteIds,
      relabel,
      counts: [...counts.values()].filter((c) => c.n !== 0),
      changes: rows,
      // Serial, or alone: the watermark moves here. Parallel: by the publish step, or here by a
      // writer no earlier writer is ahead of (storage/ordered-commits.ts), one round trip less.
      ...(locked.movesWatermark ? { rv: last } : locked.headOfLine ? { rv: last, fillGapsBelow: first } : { rv: null }),
    });
    if (locked.headOfLine) locked.published = true;
    if (opts.beforeCommit) await opts.beforeCommit();
    if (tracing) traceMark('rows-written', first, last);
    return results(first, last);
  }, prelude);
  const heldMs = held ? (held.serializedMs ?? wallNow() - held.serializedFrom) : 0;
  return { results: results.map((r) => ({ ...r, heldMs })), committed: rows.map(toChange) };
}
