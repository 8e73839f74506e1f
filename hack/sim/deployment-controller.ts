// kube-controller-manager's deployment and replicaset controllers, as far as a simulated
// cluster needs them: a Deployment keeps one ReplicaSet per pod template at its replica
// count (older ones scaled to 0), a ReplicaSet keeps that many pods, started at once on a
// node with an address from its podCIDR (pod-placement.ts), and both report their status.
// Rollouts are immediate (the new ReplicaSet at full size, the old ones at 0 in the same pass),
// minReadySeconds, pausing, revision history limits and orphan adoption are left out.
// Ref: pkg/controller/deployment (sync.go, util/deployment_util.go), pkg/controller/replicaset.
import type { Crud } from './crud.ts';
import { isPodReady, isTerminal, Placer } from './pod-placement.ts';
import type { ResourceInfo } from './resources.ts';
import { isObject, kubeTime, stable, type JsonObject, type KObject, type OwnerReference } from './types.ts';

/** The field manager of every write the controllers make, as kube-controller-manager's. */
export const controllerManager = 'kube-controller-manager';

/** kube's burstReplicas: at most this many pods created or deleted per ReplicaSet sync. */
const burstReplicas = 500;

/** apps.DefaultDeploymentUniqueLabelKey */
const hashLabel = 'pod-template-hash';
const revisionAnnotation = 'deployment.kubernetes.io/revision';

export function info(crud: Crud, id: string): ResourceInfo {
  const i = crud.registry.byId(id);
  if (!i) throw new Error(`no resource ${id}`);
  return i;
}

/** The owner reference with controller: true, if any. */
export function controllerOf(o: KObject): OwnerReference | undefined {
  return (o.metadata.ownerReferences ?? []).find((r) => r.controller === true);
}

export function controllerRef(owner: KObject): OwnerReference {
  return { apiVersion: owner.apiVersion!, kind: owner.kind!, name: owner.metadata.name!, uid: owner.metadata.uid!, controller: true, blockOwnerDeletion: true };
}

const num = (v: unknown, fallback: number): number => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);
const specOf = (o: KObject): JsonObject => (isObject(o.spec) ? o.spec : {});
const statusOf = (o: KObject): JsonObject => (isObject(o.status) ? o.status : {});
const labelsOf = (v: unknown): Record<string, string> => (isObject(v) ? (v as Record<string, string>) : {});

/** metav1.LabelSelector (matchLabels and matchExpressions) against a set of labels; an empty selector matches nothing here, as controllers treat it. */
export function selectorMatches(selector: unknown, labels: Record<string, string> | undefined): boolean {
  if (!isObject(selector)) return false;
  const l = labels ?? {};
  const ml = labelsOf(selector.matchLabels);
  const exprs = Array.isArray(selector.matchExpressions) ? selector.matchExpressions.filter(isObject) : [];
  if (Object.keys(ml).length === 0 && exprs.length === 0) return false;
  for (const [k, v] of Object.entries(ml)) if (l[k] !== v) return false;
  for (const e of exprs) {
    const key = String(e.key);
    const values = Array.isArray(e.values) ? e.values.map(String) : [];
    const has = Object.prototype.hasOwnProperty.call(l, key);
    switch (e.operator) {
      case 'In': if (!has || !values.includes(l[key])) return false; break;
      case 'NotIn': if (has && values.includes(l[key])) return false; break;
      case 'Exists': if (!has) return false; break;
      case 'DoesNotExist': if (has) return false; break;
      default: return false;
    }
  }
  return true;
}

/** rand.SafeEncodeString: each character of the text mapped into an alphabet without vowels, so no word is spelled. */
function safeEncode(text: string): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  return [...text].map((c) => alphabet[c.charCodeAt(0) % alphabet.length]).join('');
}

/** The pod-template-hash of a template: FNV-32a of the template (kube hashes its Go dump; here its sorted JSON), encoded as kube encodes it. */
export function podTemplateHash(template: unknown): string {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(stable(template), 'utf8')) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return safeEncode(String(h));
}

/** Two templates are the same but for the pod-template-hash label (deploymentutil.EqualIgnoreHash). */
function sameTemplate(a: unknown, b: unknown): boolean {
  const strip = (t: unknown) => {
    if (!isObject(t)) return t;
    const meta = isObject(t.metadata) ? t.metadata : {};
    const labels = { ...labelsOf(meta.labels) };
    delete labels[hashLabel];
    return { ...t, metadata: { ...meta, labels: Object.keys(labels).length ? labels : undefined } };
  };
  return stable(strip(a)) === stable(strip(b));
}

function ownedBy(items: KObject[], owner: KObject): KObject[] {
  return items.filter((o) => controllerOf(o)?.uid === owner.metadata.uid);
}

/** Writes the status subresource when it differs from the stored one. */
function writeStatus(crud: Crud, i: ResourceInfo, o: KObject, status: JsonObject): void {
  if (stable(status) === stable(o.status ?? {})) return;
  crud.update(i, i.versions[0], o.metadata.namespace, o.metadata.name!, { ...o, status }, { subresource: 'status', fieldManager: controllerManager });
}

/** Only the positive counts: the status fields are omitempty. */
function counts(c: Record<string, number>): JsonObject {
  return Object.fromEntries(Object.entries(c).filter(([, v]) => v > 0));
}

// ---- ReplicaSet

/** The pods kube counts for a ReplicaSet: neither terminal nor being deleted (controller.FilterActivePods). */
const isActive = (p: KObject) => !isTerminal(p) && !p.metadata.deletionTimestamp;

/** Which pods go first when scaling down (controller.ActivePodsWithRanks, simplified): unscheduled, pending, not ready, then the newest. */
function deletionOrder(a: KObject, b: KObject): number {
  const rank = (p: KObject): number[] => {
    const phase = statusOf(p).phase;
    return [specOf(p).nodeName ? 1 : 0, phase === 'Pending' ? 0 : phase === 'Running' ? 2 : 1, isPodReady(p) ? 1 : 0];
  };
  const ra = rank(a);
  const rb = rank(b);
  for (let i = 0; i < ra.length; i++) if (ra[i] !== rb[i]) return ra[i] - rb[i];
  const ta = a.metadata.creationTimestamp ?? '';
  const tb = b.metadata.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb ? 1 : -1;
  return a.metadata.name! < b.metadata.name! ? 1 : -1;
}

/** A pod of a template, as the ReplicaSet controller creates it (GetPodFromTemplate), placed and started. */
export function podFromTemplate(owner: KObject, template: unknown, placer: Placer): KObject {
  const t = isObject(template) ? template : {};
  const meta = isObject(t.metadata) ? t.metadata : {};
  const spec = isObject(t.spec) ? { ...t.spec } : {};
  const placed = placer.place(spec.containers);
  if (placed.nodeName) spec.nodeName = placed.nodeName;
  else delete spec.nodeName;
  return {
    metadata: {
      generateName: `${owner.metadata.name}-`,
      labels: { ...labelsOf(meta.labels) },
      ...(isObject(meta.annotations) ? { annotations: { ...(meta.annotations as Record<string, string>) } } : {}),
      ownerReferences: [controllerRef(owner)],
    },
    spec,
    status: placed.status,
  };
}

/** Brings a ReplicaSet's pods to spec.replicas and writes its status. */
export function syncReplicaSet(crud: Crud, namespace: string, name: string): void {
  const rsInfo = info(crud, 'apps/replicasets');
  const podInfo = info(crud, '/pods');
  const rs = crud.store.get(rsInfo.id, namespace, name);
  if (!rs || rs.metadata.deletionTimestamp) return;
  const spec = specOf(rs);
  const replicas = num(spec.replicas, 1);
  const listPods = () => ownedBy(crud.store.list('/pods', { namespace }).items, rs).filter(isActive);
  let active = listPods();
  const diff = active.length - replicas;
  if (diff < 0) {
    const placer = new Placer(crud.store);
    for (let i = 0; i < Math.min(-diff, burstReplicas); i++) {
      crud.create(podInfo, 'v1', namespace, podFromTemplate(rs, spec.template, placer), { keepStatus: true, fieldManager: controllerManager });
    }
  } else if (diff > 0) {
    for (const p of [...active].sort(deletionOrder).slice(0, Math.min(diff, burstReplicas))) {
      crud.delete(podInfo, namespace, p.metadata.name!, {});
    }
  }
  if (diff !== 0) active = listPods();
  writeStatus(crud, rsInfo, rs, replicaSetStatus(rs, active));
}

/** ReplicaSetStatus of the active pods (replica_set_utils.calculateStatus; minReadySeconds taken as 0). */
export function replicaSetStatus(rs: KObject, active: KObject[]): JsonObject {
  const template = isObject(specOf(rs).template) ? (specOf(rs).template as JsonObject) : {};
  const templateLabels = labelsOf(isObject(template.metadata) ? template.metadata.labels : undefined);
  const fullyLabeled = active.filter((p) => Object.entries(templateLabels).every(([k, v]) => p.metadata.labels?.[k] === v)).length;
  const ready = active.filter(isPodReady).length;
  return {
    replicas: active.length,
    ...counts({ fullyLabeledReplicas: fullyLabeled, readyReplicas: ready, availableReplicas: ready }),
    ...(rs.metadata.generation ? { observedGeneration: rs.metadata.generation } : {}),
  };
}

// ---- Deployment

const revisionOf = (o: KObject): number => Number(o.metadata.annotations?.[revisionAnnotation] ?? 0) || 0;

/** maxSurge of a RollingUpdate deployment (default 25%, rounded up), 0 for Recreate. */
function maxSurge(d: KObject, replicas: number): number {
  const strategy = isObject(specOf(d).strategy) ? (specOf(d).strategy as JsonObject) : {};
  if (strategy.type === 'Recreate') return 0;
  const ru = isObject(strategy.rollingUpdate) ? strategy.rollingUpdate : {};
  return scaled(ru.maxSurge ?? '25%', replicas, true);
}

/** maxUnavailable (default 25%, rounded down), 0 for Recreate. */
function maxUnavailable(d: KObject, replicas: number): number {
  const strategy = isObject(specOf(d).strategy) ? (specOf(d).strategy as JsonObject) : {};
  if (strategy.type === 'Recreate') return 0;
  const ru = isObject(strategy.rollingUpdate) ? strategy.rollingUpdate : {};
  return Math.min(replicas, scaled(ru.maxUnavailable ?? '25%', replicas, false));
}

/** intstr.GetScaledValueFromIntOrPercent */
function scaled(v: unknown, total: number, roundUp: boolean): number {
  if (typeof v === 'number') return v;
  const m = typeof v === 'string' ? /^(\d+)%$/.exec(v) : null;
  if (!m) return 0;
  const x = (Number(m[1]) * total) / 100;
  return roundUp ? Math.ceil(x) : Math.floor(x);
}

/** The annotations kube keeps on a Deployment's ReplicaSets (SetNewReplicaSetAnnotations, SetReplicasAnnotations). */
function replicasAnnotations(d: KObject, replicas: number): Record<string, string> {
  return { 'deployment.kubernetes.io/desired-replicas': String(replicas), 'deployment.kubernetes.io/max-replicas': String(replicas + maxSurge(d, replicas)) };
}

function newReplicaSet(crud: Crud, d: KObject, replicas: number, revision: number): KObject {
  const spec = specOf(d);
  const template = isObject(spec.template) ? (spec.template as JsonObject) : {};
  const hash = podTemplateHash(template);
  const tmeta = isObject(template.metadata) ? template.metadata : {};
  const labels = { ...labelsOf(tmeta.labels), [hashLabel]: hash };
  const selector = isObject(spec.selector) ? spec.selector : {};
  const rsInfo = info(crud, 'apps/replicasets');
  return crud.create(rsInfo, 'v1', d.metadata.namespace, {
    metadata: {
      name: `${d.metadata.name}-${hash}`,
      labels,
      annotations: { ...replicasAnnotations(d, replicas), [revisionAnnotation]: String(revision) },
      ownerReferences: [controllerRef(d)],
    },
    spec: {
      replicas,
      ...(spec.minReadySeconds !== undefined ? { minReadySeconds: spec.minReadySeconds } : {}),
      selector: { ...selector, matchLabels: { ...labelsOf(selector.matchLabels), [hashLabel]: hash } },
      template: { ...template, metadata: { ...tmeta, labels } },
    },
  }, { fieldManager: controllerManager });
}

function scaleReplicaSet(crud: Crud, d: KObject, rs: KObject, replicas: number): void {
  const rsInfo = info(crud, 'apps/replicasets');
  const annotations = { ...rs.metadata.annotations, ...replicasAnnotations(d, replicas) };
  crud.update(rsInfo, 'v1', rs.metadata.namespace, rs.metadata.name!, { ...rs, metadata: { ...rs.metadata, annotations }, spec: { ...specOf(rs), replicas } }, { fieldManager: controllerManager });
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastUpdateTime?: string;
  lastTransitionTime?: string;
}

/** deploymentutil.SetDeploymentCondition: the same status and reason keep the condition as it is; a changed one goes last. */
function setCondition(conditions: Condition[], c: Condition): Condition[] {
  const cur = conditions.find((x) => x.type === c.type);
  if (cur && cur.status === c.status && cur.reason === c.reason) return conditions;
  const now = kubeTime();
  const next = { ...c, lastUpdateTime: now, lastTransitionTime: cur && cur.status === c.status ? cur.lastTransitionTime : now };
  return [...conditions.filter((x) => x.type !== c.type), next];
}

/** DeploymentStatus of its ReplicaSets (sync.go calculateStatus, and syncRolloutStatus's Progressing condition). */
export function deploymentStatus(d: KObject, all: KObject[], newRS: KObject | undefined): JsonObject {
  const desired = num(specOf(d).replicas, 1);
  const sum = (rss: KObject[], field: string) => rss.reduce((n, rs) => n + num(statusOf(rs)[field], 0), 0);
  const available = sum(all, 'availableReplicas');
  const total = all.reduce((n, rs) => n + num(specOf(rs).replicas, 0), 0);
  const replicas = sum(all, 'replicas');
  const updated = newRS ? num(statusOf(newRS).replicas, 0) : 0;
  let conditions = (Array.isArray(statusOf(d).conditions) ? statusOf(d).conditions : []) as Condition[];
  conditions = available >= desired - maxUnavailable(d, desired)
    ? setCondition(conditions, { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable', message: 'Deployment has minimum availability.' })
    : setCondition(conditions, { type: 'Available', status: 'False', reason: 'MinimumReplicasUnavailable', message: 'Deployment does not have minimum availability.' });
  if (newRS) {
    const complete = updated === desired && replicas === desired && available === desired;
    conditions = complete
      ? setCondition(conditions, { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable', message: `ReplicaSet "${newRS.metadata.name}" has successfully progressed.` })
      : setCondition(conditions, { type: 'Progressing', status: 'True', reason: 'ReplicaSetUpdated', message: `ReplicaSet "${newRS.metadata.name}" is progressing.` });
  }
  return {
    ...(d.metadata.generation ? { observedGeneration: d.metadata.generation } : {}),
    ...counts({ replicas, updatedReplicas: updated, readyReplicas: sum(all, 'readyReplicas'), availableReplicas: available, unavailableReplicas: Math.max(0, total - available) }),
    conditions,
  };
}

/** Brings a Deployment's ReplicaSets to its template and replica count and writes its status. */
export function syncDeployment(crud: Crud, namespace: string, name: string): void {
  const dInfo = info(crud, 'apps/deployments');
  let d = crud.store.get(dInfo.id, namespace, name);
  if (!d || d.metadata.deletionTimestamp) return;
  const spec = specOf(d);
  const replicas = num(spec.replicas, 1);
  const owned = () => ownedBy(crud.store.list('apps/replicasets', { namespace }).items, d!);
  let all = owned();
  let newRS = all.find((rs) => sameTemplate(specOf(rs).template, spec.template));
  if (!newRS) {
    const revision = Math.max(0, ...all.map(revisionOf)) + 1;
    newRS = newReplicaSet(crud, d, replicas, revision);
    const annotations = { ...d.metadata.annotations, [revisionAnnotation]: String(revision) };
    d = crud.update(dInfo, 'v1', namespace, name, { ...d, metadata: { ...d.metadata, annotations } }, { fieldManager: controllerManager });
  } else if (num(specOf(newRS).replicas, 1) !== replicas) {
    scaleReplicaSet(crud, d, newRS, replicas);
  }
  for (const old of all) {
    if (old.metadata.uid !== newRS.metadata.uid && num(specOf(old).replicas, 1) !== 0) scaleReplicaSet(crud, d, old, 0);
  }
  all = owned();
  newRS = all.find((rs) => rs.metadata.uid === newRS!.metadata.uid);
  writeStatus(crud, dInfo, d, deploymentStatus(d, all, newRS));
}
