// The fields a kind knows, for kube-apiserver's strict decoding of writes (fieldValidation:
// `unknown field "spec.foo"` under Strict, a Warning under Warn, silently dropped under
// Ignore): a shape of nested field names, and the walk that finds and drops what it does not
// know.

/** `true`: any value; a map: an object with those fields (anything else is unknown). */
export type Shape = true | { [field: string]: Shape };

/** metav1.ObjectMeta's fields. */
export const objectMetaShape: Shape = {
  name: true, generateName: true, namespace: true, selfLink: true, uid: true, resourceVersion: true, generation: true,
  creationTimestamp: true, deletionTimestamp: true, deletionGracePeriodSeconds: true, labels: true, annotations: true,
  ownerReferences: true, finalizers: true, managedFields: true,
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Fields of `obj` the shape does not know, as `spec.foo` paths, and `obj` without them (what
 * kube-apiserver keeps under fieldValidation Ignore or Warn). A list is walked item by item
 * when its shape is given as `{ '[]': itemShape }`.
 */
export function pruneUnknownFields(obj: unknown, shape: Shape, path = ''): { pruned: unknown; unknown: string[] } {
  if (shape === true) return { pruned: obj, unknown: [] };
  const items = shape['[]'];
  if (items !== undefined) {
    if (!Array.isArray(obj)) return { pruned: obj, unknown: [] };
    const unknown: string[] = [];
    const pruned = obj.map((v, i) => {
      const r = pruneUnknownFields(v, items, `${path}[${i}]`);
      unknown.push(...r.unknown);
      return r.pruned;
    });
    return { pruned, unknown };
  }
  if (!isRecord(obj)) return { pruned: obj, unknown: [] };
  const out: Record<string, unknown> = {};
  const unknown: string[] = [];
  for (const [k, v] of Object.entries(obj)) {
    const p = path ? `${path}.${k}` : k;
    const sub = Object.hasOwn(shape, k) ? shape[k] : undefined;
    if (sub === undefined) {
      unknown.push(p);
      continue;
    }
    const r = pruneUnknownFields(v, sub, p);
    out[k] = r.pruned;
    unknown.push(...r.unknown);
  }
  return { pruned: out, unknown };
}
