// Which collections exist: the built-in `workloads` and `any`, and those the operator declares
// in a file (--collections-file), read at start:
//
//   collections:
//     - name: network
//       resources: [services, ingresses.networking.k8s.io, endpointslices.discovery.k8s.io]
//     - name: unmanaged
//       resources:
//         - { resource: pods, bare: true }            # only pods without an owner
//         - { resource: replicasets.apps, bare: true }
//
// `<resource>[.<group>]` as external metrics name resources. A file that cannot be used as a
// whole (not YAML, a bad entry, a name taken twice or by a built-in) is refused at start.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { CollectionKind } from '../../storage/types.ts';
import type { Authorizer } from '../auth/authz.ts';
import { parseResourceName, resourceMetricName } from '../external/rules.ts';

export interface CollectionDefinition {
  name: string;
  /** The kinds it reads; empty for `any`, whose kinds are the request's (`groups=`, `resources=`). */
  kinds: CollectionKind[];
}

/** At most this many kinds in one collection (each is at least one ordered scan of a page). */
export const maxKinds = 32;

export const anyCollection = 'any';

/**
 * `workloads`: what runs, each workload once. Clusterpedia's built-in `workloads` holds
 * Deployments, DaemonSets and StatefulSets (pkg/storage/internalstorage/collectionresource.go);
 * Panoptes adds Jobs and CronJobs, and the ReplicaSets and Pods that no controller owns
 * ("bare": no metadata.ownerReferences), since a Deployment's ReplicaSets and every
 * controller's Pods are already counted through their owner.
 */
export const workloads: CollectionDefinition = {
  name: 'workloads',
  kinds: [
    { group: 'apps', resource: 'deployments' },
    { group: 'apps', resource: 'statefulsets' },
    { group: 'apps', resource: 'daemonsets' },
    { group: 'batch', resource: 'jobs' },
    { group: 'batch', resource: 'cronjobs' },
    { group: 'apps', resource: 'replicasets', bare: true },
    { group: '', resource: 'pods', bare: true },
  ],
};

export const builtinCollections: readonly CollectionDefinition[] = [{ name: anyCollection, kinds: [] }, workloads];

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A kind as the file and the `resources=` parameter write it: `pods`, `deployments.apps`. */
export const kindName = (k: { group: string; resource: string }): string => resourceMetricName(k.group, k.resource);

function parseKind(entry: unknown, where: string): CollectionKind {
  const text = typeof entry === 'string' ? entry : isRecord(entry) ? entry.resource : undefined;
  if (typeof text !== 'string') throw new Error(`${where}: a resource name (<resource>[.<group>]) or { resource, bare }`);
  const kind = parseResourceName(text);
  if (!kind) throw new Error(`${where}: ${JSON.stringify(text)} is not <resource>[.<group>]`);
  if (isRecord(entry)) {
    const unknown = Object.keys(entry).filter((k) => k !== 'resource' && k !== 'bare');
    if (unknown.length) throw new Error(`${where}: unknown field ${JSON.stringify(unknown[0])} (resource, bare)`);
    if (entry.bare !== undefined && typeof entry.bare !== 'boolean') throw new Error(`${where}: bare must be true or false`);
    if (entry.bare) return { ...kind, bare: true };
  }
  return kind;
}

/** The declared collections of a file's text; throws an Error naming the first problem. */
export function parseCollections(text: string, file = 'collections file'): CollectionDefinition[] {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new Error(`${file}: not YAML: ${(err as Error).message}`);
  }
  if (doc === null || doc === undefined) return [];
  if (!isRecord(doc) || Object.keys(doc).some((k) => k !== 'collections') || !Array.isArray(doc.collections ?? [])) throw new Error(`${file}: expected { collections: [ { name, resources } ] }`);
  const out: CollectionDefinition[] = [];
  const names = new Set(builtinCollections.map((c) => c.name));
  for (const [i, entry] of ((doc.collections ?? []) as unknown[]).entries()) {
    const where = `${file}: collections[${i}]`;
    if (!isRecord(entry)) throw new Error(`${where}: expected { name, resources }`);
    const unknown = Object.keys(entry).filter((k) => k !== 'name' && k !== 'resources');
    if (unknown.length) throw new Error(`${where}: unknown field ${JSON.stringify(unknown[0])} (name, resources)`);
    const name = entry.name;
    if (typeof name !== 'string' || name.length > 63 || !dnsLabel.test(name)) throw new Error(`${where}: name must be a DNS label`);
    if (names.has(name)) throw new Error(`${where}: the collection ${JSON.stringify(name)} is ${builtinCollections.some((c) => c.name === name) ? 'built in' : 'declared twice'}`);
    names.add(name);
    if (!Array.isArray(entry.resources) || entry.resources.length === 0) throw new Error(`${where}: resources must list at least one resource`);
    if (entry.resources.length > maxKinds) throw new Error(`${where}: at most ${maxKinds} resources`);
    const kinds = entry.resources.map((r, j) => parseKind(r, `${where}.resources[${j}]`));
    const seen = new Set<string>();
    for (const k of kinds) {
      if (seen.has(kindName(k))) throw new Error(`${where}: ${kindName(k)} is listed twice`);
      seen.add(kindName(k));
    }
    out.push({ name, kinds });
  }
  return out;
}

/** The built-in collections and those of `file` (read once). */
export function loadCollections(file?: string): CollectionDefinition[] {
  if (file === undefined) return [...builtinCollections];
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`);
  }
  return [...builtinCollections, ...parseCollections(text, file)];
}

/** What serving collectionresources needs (serve.ts). */
export interface CollectionsDeps {
  /** The built-in collections and the operator's (definitions.ts). */
  definitions: CollectionDefinition[];
  /** Secure serving: authorizes each kind a collection reads. */
  authorizer?: Authorizer;
}
