// The resource registry of one simulated cluster: the built-in resources kube-apiserver
// v1.28 serves (read from the captured discovery documents in ./reference), plus the custom
// resources of every established CustomResourceDefinition, plus the resources of aggregated
// APIs (an APIService with a service: the simulator plays their server too, from its store).
import { readFileSync } from 'node:fs';
import { crdPrinterColumns, type PrinterColumn } from '../../kube/table.ts';
import { isObject, type KObject } from './types.ts';

/** Where the scale subresource finds replicas, as in a CRD's `subresources.scale`. */
export interface ScaleSpec {
  specReplicasPath: string;
  statusReplicasPath: string;
  labelSelectorPath?: string;
}

export interface ResourceInfo {
  /** Collection id: `group/resource` (`/pods` for the core group). One store per id. */
  id: string;
  group: string;
  /** Versions served, preferred first. */
  versions: string[];
  resource: string;
  kind: string;
  listKind: string;
  singularName: string;
  namespaced: boolean;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
  status: boolean;
  scale?: ScaleSpec;
  /** Whether metadata.generation is kept (bumped when the spec changes). */
  generation: boolean;
  /** The CRD that defines it, for custom resources. */
  crd?: string;
  /** Custom resources: each served version's additionalPrinterColumns ([] when it has none). */
  printerColumns?: Record<string, PrinterColumn[]>;
  /** Resources of an aggregated API: the Service its APIService names. */
  aggregated?: ApiServiceRef;
}

/** An APIService's `spec.service`. */
export interface ApiServiceRef {
  namespace: string;
  name: string;
  port?: number;
}

/**
 * An API served by an extension apiserver behind the cluster's aggregator (an APIService with
 * `spec.service`): Panoptes' own panoptes.io on its host cluster, Clusterpedia, a sample
 * apiserver. The simulator serves its resources from its store, as it serves a CRD's.
 */
export interface AggregatedApi {
  group: string;
  version: string;
  service: ApiServiceRef;
  resources: { resource: string; kind: string; namespaced: boolean; singularName?: string; shortNames?: string[]; verbs?: string[] }[];
}

interface DiscoveryResource {
  name: string;
  singularName: string;
  namespaced: boolean;
  kind: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
}

interface DiscoveryList {
  groupVersion: string;
  resources: DiscoveryResource[];
}

const refDir = new URL('./reference/', import.meta.url);
const readJson = (name: string): unknown => JSON.parse(readFileSync(new URL(name, refDir), 'utf8'));

/** Built-in kinds whose strategy keeps metadata.generation (kube-apiserver's PrepareForCreate). */
const withGeneration = new Set([
  'apps/deployments', 'apps/replicasets', 'apps/statefulsets', 'apps/daemonsets', 'apps/controllerrevisions',
  'batch/jobs', 'batch/cronjobs', '/replicationcontrollers', 'networking.k8s.io/ingresses',
  'networking.k8s.io/networkpolicies', 'policy/poddisruptionbudgets', 'apiextensions.k8s.io/customresourcedefinitions',
  'autoscaling/horizontalpodautoscalers', 'admissionregistration.k8s.io/validatingwebhookconfigurations',
  'admissionregistration.k8s.io/mutatingwebhookconfigurations', 'flowcontrol.apiserver.k8s.io/flowschemas',
  'flowcontrol.apiserver.k8s.io/prioritylevelconfigurations', 'discovery.k8s.io/endpointslices',
]);

const builtinScale: ScaleSpec = { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' };

interface GroupEntry {
  name: string;
  versions: string[];
  /** Resource ids per version, in discovery order. */
  resources: Map<string, string[]>;
}

export class Registry {
  private readonly infos = new Map<string, ResourceInfo>();
  private readonly groups: GroupEntry[] = [];
  private readonly crds = new Map<string, string>();
  private readonly changeListeners: (() => void)[] = [];
  /** The group versions kube-apiserver itself serves (from the reference discovery), as `group/version`. */
  private readonly builtin = new Set<string>();

  constructor() {
    const apis = readJson('apis.json') as { groups: { name: string; preferredVersion: { version: string } }[] };
    const lists: DiscoveryList[] = [readJson('discovery/v1.json') as DiscoveryList];
    for (const g of apis.groups) {
      try {
        lists.push(readJson(`discovery/${g.name}_${g.preferredVersion.version}.json`) as DiscoveryList);
      } catch {
        // Group not served by the simulator (authentication, authorization: no stored objects).
      }
    }
    for (const list of lists) {
      const [group, version] = list.groupVersion.includes('/') ? list.groupVersion.split('/') : ['', list.groupVersion];
      const entry: GroupEntry = { name: group, versions: [version], resources: new Map([[version, []]]) };
      const subs = new Set(list.resources.filter((r) => r.name.includes('/')).map((r) => r.name));
      for (const r of list.resources) {
        if (r.name.includes('/') || !r.verbs.includes('watch')) continue;
        const id = `${group}/${r.name}`;
        const info: ResourceInfo = {
          id, group, versions: [version], resource: r.name, kind: r.kind, listKind: `${r.kind}List`,
          singularName: r.singularName, namespaced: r.namespaced, verbs: r.verbs, shortNames: r.shortNames,
          categories: r.categories, status: subs.has(`${r.name}/status`), generation: withGeneration.has(id),
        };
        if (subs.has(`${r.name}/scale`)) info.scale = builtinScale;
        this.infos.set(id, info);
        entry.resources.get(version)!.push(id);
      }
      this.groups.push(entry);
      this.builtin.add(`${group}/${version}`);
    }
  }

  /** The resource served at /api(s)/group/version/resource, if any. */
  lookup(group: string, version: string, resource: string): ResourceInfo | undefined {
    const info = this.infos.get(`${group}/${resource}`);
    return info && info.versions.includes(version) ? info : undefined;
  }

  byId(id: string): ResourceInfo | undefined {
    return this.infos.get(id);
  }

  /** The resource of a kind in a group (first match). */
  byKind(group: string, kind: string): ResourceInfo | undefined {
    for (const info of this.infos.values()) if (info.group === group && info.kind === kind) return info;
    return undefined;
  }

  all(): ResourceInfo[] {
    return [...this.infos.values()];
  }

  /** Groups in discovery order (core group first, named ""), each with versions preferred first. */
  groupList(): { name: string; versions: { version: string; resources: ResourceInfo[] }[] }[] {
    return this.groups.map((g) => ({
      name: g.name,
      versions: g.versions.map((v) => ({ version: v, resources: (g.resources.get(v) ?? []).map((id) => this.infos.get(id)!) })),
    }));
  }

  /**
   * Every group version served and where from: kube-apiserver itself (`builtin`), a CRD, or an
   * aggregated API's Service. What the aggregator's APIServices list (apiservices.ts).
   */
  groupVersionSources(): { group: string; version: string; source: 'builtin' | 'crd' | ApiServiceRef }[] {
    return this.groups.flatMap((g) =>
      g.versions.map((version) => {
        if (this.builtin.has(`${g.name}/${version}`)) return { group: g.name, version, source: 'builtin' as const };
        const first = this.infos.get((g.resources.get(version) ?? [])[0] ?? '');
        return { group: g.name, version, source: first?.aggregated ?? ('crd' as const) };
      }),
    );
  }

  /** Called after the served APIs changed (a CRD came, changed or went; an aggregated API was added). */
  onChange(listener: () => void): void {
    this.changeListeners.push(listener);
  }

  private changed(): void {
    for (const l of this.changeListeners) l();
  }

  /** Serves an aggregated API's resources (as its extension apiserver would, behind the aggregator). */
  addAggregated(api: AggregatedApi): void {
    let group = this.groups.find((g) => g.name === api.group);
    if (!group) {
      group = { name: api.group, versions: [], resources: new Map() };
      this.groups.push(group);
    }
    if (!group.versions.includes(api.version)) group.versions.push(api.version);
    sortVersions(group.versions);
    const ids = group.resources.get(api.version) ?? [];
    for (const r of api.resources) {
      const id = `${api.group}/${r.resource}`;
      this.infos.set(id, {
        id, group: api.group, versions: [api.version], resource: r.resource, kind: r.kind, listKind: `${r.kind}List`,
        singularName: r.singularName ?? r.kind.toLowerCase(), namespaced: r.namespaced,
        verbs: r.verbs ?? ['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch'],
        shortNames: r.shortNames, status: false, generation: true, aggregated: api.service,
      });
      if (!ids.includes(id)) ids.push(id);
    }
    group.resources.set(api.version, ids);
    this.changed();
  }

  hasGroupVersion(group: string, version: string): boolean {
    return this.groups.some((g) => g.name === group && g.versions.includes(version));
  }

  /**
   * Serves the custom resource a CustomResourceDefinition defines (versions with served: true,
   * storage version preferred, like kube-apiserver's discovery). Replaces an earlier definition.
   */
  addCRD(crd: KObject): ResourceInfo {
    const spec = crd.spec as CRDSpec;
    const name = crd.metadata.name!;
    this.dropCRD(name);
    const served = spec.versions.filter((v) => v.served);
    served.sort((a, b) => Number(b.storage) - Number(a.storage));
    const storage = served[0];
    const id = `${spec.group}/${spec.names.plural}`;
    const sub = storage.subresources ?? {};
    const info: ResourceInfo = {
      id, group: spec.group, versions: served.map((v) => v.name), resource: spec.names.plural, kind: spec.names.kind,
      listKind: spec.names.listKind ?? `${spec.names.kind}List`, singularName: spec.names.singular ?? spec.names.kind.toLowerCase(),
      namespaced: spec.scope === 'Namespaced',
      verbs: ['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch'],
      shortNames: spec.names.shortNames, categories: spec.names.categories, status: isObject(sub.status),
      scale: isObject(sub.scale) ? (sub.scale as unknown as ScaleSpec) : undefined, generation: true, crd: name,
      printerColumns: Object.fromEntries(served.map((v) => [v.name, crdPrinterColumns(v)])),
    };
    this.infos.set(id, info);
    this.crds.set(name, id);
    let group = this.groups.find((g) => g.name === spec.group);
    if (!group) {
      group = { name: spec.group, versions: [], resources: new Map() };
      this.groups.push(group);
    }
    for (const v of info.versions) {
      if (!group.versions.includes(v)) group.versions.push(v);
      const ids = group.resources.get(v) ?? [];
      ids.push(id);
      group.resources.set(v, ids);
    }
    sortVersions(group.versions);
    this.changed();
    return info;
  }

  /** Stops serving a CRD's resource; returns its collection id. */
  removeCRD(name: string): string | undefined {
    const id = this.dropCRD(name);
    if (id) this.changed();
    return id;
  }

  private dropCRD(name: string): string | undefined {
    const id = this.crds.get(name);
    if (!id) return undefined;
    this.crds.delete(name);
    this.infos.delete(id);
    const info = id.split('/');
    const group = this.groups.find((g) => g.name === info[0]);
    if (group) {
      for (const [v, ids] of group.resources) {
        const rest = ids.filter((x) => x !== id);
        if (rest.length) group.resources.set(v, rest);
        else group.resources.delete(v);
      }
      group.versions = group.versions.filter((v) => group.resources.has(v));
      if (group.versions.length === 0) this.groups.splice(this.groups.indexOf(group), 1);
    }
    return id;
  }
}

interface CRDVersion {
  name: string;
  served: boolean;
  storage: boolean;
  subresources?: { status?: unknown; scale?: unknown };
  additionalPrinterColumns?: unknown[];
}

interface CRDSpec {
  group: string;
  scope: 'Namespaced' | 'Cluster';
  names: { plural: string; singular?: string; kind: string; listKind?: string; shortNames?: string[]; categories?: string[] };
  versions: CRDVersion[];
}

/** Kubernetes version priority: GA > beta > alpha, higher numbers first (v2 > v1 > v1beta2 > v1beta1 > v1alpha1). */
export function versionPriority(a: string, b: string): number {
  const parse = (v: string): [number, number, number] | undefined => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return undefined;
    return [m[2] === undefined ? 2 : m[2] === 'beta' ? 1 : 0, Number(m[1]), Number(m[3] ?? 0)];
  };
  const pa = parse(a);
  const pb = parse(b);
  if (!pa || !pb) return pa ? -1 : pb ? 1 : a.localeCompare(b);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pb[i] - pa[i];
  return 0;
}

function sortVersions(versions: string[]): void {
  versions.sort(versionPriority);
}

/** Checks a CustomResourceDefinition's spec enough to serve it; returns the problem, if any. */
export function invalidCRD(crd: KObject): string | undefined {
  const spec = crd.spec;
  if (!isObject(spec)) return 'spec: Required value';
  const names = spec.names;
  if (typeof spec.group !== 'string' || spec.group === '') return 'spec.group: Required value';
  if (!isObject(names) || typeof names.plural !== 'string' || typeof names.kind !== 'string') return 'spec.names: plural and kind are required';
  if (crd.metadata.name !== `${names.plural}.${spec.group}`) return `metadata.name: Invalid value: ${JSON.stringify(crd.metadata.name)}: must be spec.names.plural+"."+spec.group`;
  if (spec.scope !== 'Namespaced' && spec.scope !== 'Cluster') return 'spec.scope: Unsupported value: must be Namespaced or Cluster';
  if (!Array.isArray(spec.versions) || spec.versions.length === 0) return 'spec.versions: Required value';
  const versions = spec.versions as unknown[];
  if (!versions.every((v) => isObject(v) && typeof v.name === 'string')) return 'spec.versions: each version needs a name';
  if (versions.filter((v) => isObject(v) && v.storage === true).length !== 1) return 'spec.versions: Invalid value: must have exactly one version marked as storage version';
  return undefined;
}
