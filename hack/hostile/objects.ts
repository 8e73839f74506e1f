// Hostile member objects: values Kubernetes accepts (or a non-validating aggregated API
// server may send) that a store is tempted to bound, escape or parse wrongly. Each generator
// says which limit it sits at and where that limit comes from. Used by the storage tests of
// both backends and the end-to-end hostile-data suite (hack/hostile/hostile-e2e.test.ts).
import type { KubeObject } from '../../storage/types.ts';

/** Kubernetes' limits, as kube-apiserver v1.28 validates them. */
export const kubeLimits = {
  /** A label key's name part (k8s.io/apimachinery validation.IsQualifiedName: qualifiedNameMaxLength). */
  labelName: 63,
  /** A label key's prefix, a DNS subdomain (DNS1123SubdomainMaxLength). */
  labelPrefix: 253,
  /** A label value (LabelValueMaxLength). */
  labelValue: 63,
  /** An object name that is a DNS subdomain (most kinds). */
  name: 253,
  /** A namespace name, a DNS label. */
  namespace: 63,
  /** A ConfigMap's data and binaryData together (core validation: MaxConfigMapSize = 1 MiB). */
  configMapBytes: 1024 * 1024,
  /** etcd's default --max-request-bytes (1.5 MiB): the largest object a member can hold. */
  etcdRequestBytes: 1.5 * 1024 * 1024,
  /** JSON nesting kube-apiserver decodes (Go encoding/json's maxNestingDepth, kept by sigs.k8s.io/json). */
  jsonDepth: 10_000,
} as const;

/** A string of `n` characters cycling through `alphabet`. */
export function text(n: number, alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789'): string {
  let s = '';
  while (s.length < n) s += alphabet;
  return s.slice(0, n);
}

/** A DNS label of exactly `n` (≤ 63) characters. */
const dnsLabel = (n: number, seed = 'a') => (seed + text(n - 1)).slice(0, n);

/** A DNS subdomain of exactly `n` characters (labels of 63 joined by dots). */
export function dnsSubdomain(n: number): string {
  const parts: string[] = [];
  let left = n;
  while (left > 0) {
    const take = Math.min(63, left);
    parts.push(dnsLabel(take));
    left -= take + 1; // the dot
  }
  let s = parts.join('.');
  if (s.length > n) s = s.slice(0, n);
  return s.endsWith('.') ? `${s.slice(0, -1)}a` : s;
}

/** Label keys and values exactly at kube's limits (all valid: selectors can name them). */
export function labelsAtLimits(): Record<string, string> {
  return {
    [`${dnsSubdomain(kubeLimits.labelPrefix)}/${dnsLabel(kubeLimits.labelName, 'k')}`]: dnsLabel(kubeLimits.labelValue, 'v'),
    [dnsLabel(kubeLimits.labelName, 'n')]: dnsLabel(kubeLimits.labelValue, 'w'),
    replicas: '42',
  };
}

/** Labels only a non-validating aggregated API server sends: no selector can name them, storage must still hold the object. */
export function labelsBeyondKube(): Record<string, string> {
  return {
    'nul-value': 'a\u0000b',
    [`long-value`]: text(5000),
    [`key-${text(400)}`]: 'x',
    'key\u0000nul': 'y',
    'emoji-value': '\u{1F600}',
  };
}

/** Strings that are valid JSON and valid Kubernetes annotation values but trouble for SQL: NUL, astral characters, lone surrogates. */
export const awkwardStrings = {
  nul: 'before\u0000after',
  onlyNul: '\u0000',
  /** A backslash followed by the six characters `u0000`: no NUL at all (an escape-aware mapper must leave it). */
  escapedBackslashU0000: 'a\\u0000b',
  astral: 'emoji \u{1F600} and \u{10FFFF} and \u{1D11E}',
  controls: 'tab\there bell\u0007 escape\u001b',
  /** A high surrogate without its low half, and a low one alone. JSON allows both as \u escapes; UTF-8 cannot encode them. */
  loneHigh: 'x\ud800y',
  loneLow: 'x\udc00y',
} as const;

/** An ownerReference with a uid of `n` characters: kube validates only that it is not empty. */
export function ownerReference(uidLength: number): { apiVersion: string; kind: string; name: string; uid: string; controller: boolean } {
  return { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'owner', uid: text(uidLength, '0123456789abcdef-'), controller: true };
}

/** A value nested `depth` levels deep: {"d":{"d":...{"leaf":1}}}. */
export function nested(depth: number): Record<string, unknown> {
  let v: Record<string, unknown> = { leaf: 1 };
  for (let i = 1; i < depth; i++) v = { d: v };
  return v;
}

interface Meta {
  namespace: string;
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: ReturnType<typeof ownerReference>[];
}

const metadata = (m: Meta): NonNullable<KubeObject['metadata']> => ({
  name: m.name,
  namespace: m.namespace,
  ...(m.labels ? { labels: m.labels } : {}),
  ...(m.annotations ? { annotations: m.annotations } : {}),
  ...(m.ownerReferences ? { ownerReferences: m.ownerReferences } : {}),
});

/** A ConfigMap (apiVersion v1) with the given metadata and data. */
export function configMap(m: Meta, data: Record<string, string> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: metadata(m), data };
}

/** A ConfigMap whose data is `bytes` long in total (kube's limit: kubeLimits.configMapBytes). */
export function largeConfigMap(m: Meta, bytes: number): KubeObject {
  const chunk = 64 * 1024;
  const data: Record<string, string> = {};
  for (let i = 0, left = bytes; left > 0; i++) {
    const key = `part-${String(i).padStart(3, '0')}`;
    const n = Math.min(chunk, left - key.length);
    data[key] = text(Math.max(1, n));
    left -= key.length + Math.max(1, n);
  }
  return configMap(m, data);
}

/** One of every hostile ConfigMap, in namespace `namespace` (each name says what it holds). */
export function hostileConfigMaps(namespace: string): KubeObject[] {
  return [
    configMap({ namespace, name: 'nul-annotation', annotations: { 'example.com/nul': awkwardStrings.nul, 'example.com/only-nul': awkwardStrings.onlyNul } }, { v: awkwardStrings.nul }),
    configMap({ namespace, name: 'escaped-backslash', annotations: { 'example.com/esc': awkwardStrings.escapedBackslashU0000 } }, { v: awkwardStrings.escapedBackslashU0000 }),
    configMap({ namespace, name: 'astral', labels: { tier: 'astral' }, annotations: { 'example.com/astral': awkwardStrings.astral } }, { [`k`]: awkwardStrings.astral, controls: awkwardStrings.controls }),
    configMap({ namespace, name: 'lone-surrogates', annotations: { 'example.com/high': awkwardStrings.loneHigh, 'example.com/low': awkwardStrings.loneLow } }, { v: awkwardStrings.loneHigh }),
    configMap({ namespace, name: 'owner-uid-300', ownerReferences: [ownerReference(300)] }),
    configMap({ namespace, name: 'owner-uid-10000', ownerReferences: [ownerReference(10_000)] }),
    configMap({ namespace, name: 'labels-at-limits', labels: labelsAtLimits() }),
    configMap({ namespace, name: dnsSubdomain(kubeLimits.name) }),
    largeConfigMap({ namespace, name: 'one-mebibyte' }, kubeLimits.configMapBytes),
  ];
}

/** Custom resources (group hostile.example.com, kind Blob, plural blobs) for what only a CRD (or an aggregated server) can hold. */
export const blobResource = { group: 'hostile.example.com', version: 'v1', resource: 'blobs', kind: 'Blob' } as const;

export function blob(m: Meta, spec: Record<string, unknown>, status: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: `${blobResource.group}/${blobResource.version}`, kind: blobResource.kind, metadata: metadata(m), spec, status };
}

/** Env entries of the huge-array blob: an array as long as etcd's request limit lets a pod's container have (1.3 MiB). */
export const hugeArrayEntries = 45_000;

/** Blobs at the limits of nesting and size, and with labels no validating server allows. */
export function hostileBlobs(namespace: string): KubeObject[] {
  return [
    // A JSON path term with [*] over it walks every element (once: storage/dialect.ts jsonAnyAt).
    blob({ namespace, name: 'huge-array' }, { containers: [{ name: 'c', env: Array.from({ length: hugeArrayEntries }, (_, i) => ({ name: `E${i}`, value: 'v' })) }] }, { ready: 1 }),
    blob({ namespace, name: 'nested-1500' }, { tree: nested(1500) }, { ready: 1 }),
    blob({ namespace, name: 'nested-max', annotations: { 'example.com/depth': String(kubeLimits.jsonDepth) } }, { tree: nested(kubeLimits.jsonDepth - 3) }, { ready: 1 }),
    // Near etcd's request limit: 1.5 MiB less room for the envelope.
    blob({ namespace, name: 'near-etcd-limit' }, { payload: text(kubeLimits.etcdRequestBytes - 4096) }, { ready: 1 }),
    blob({ namespace, name: 'labels-beyond-kube', labels: labelsBeyondKube() }, { nul: awkwardStrings.nul }, { ready: 1 }),
    blob({ namespace, name: 'astral-\u{1F600}-name' }, {}, { ready: 1 }),
  ];
}
