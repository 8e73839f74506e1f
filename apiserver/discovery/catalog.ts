// What is served, built from what is actually synced: per member cluster, the resources
// synchro records in the cluster's status (kind, scope, names from the member's own
// discovery), CRD objects in storage (names and printer columns of custom resources), and
// the resources storage holds (clusters whose synchro is gone keep their data served). The
// all-clusters view is the union. Kept in memory and refreshed in the background, so
// discovery answers while storage is unreachable.
import { readFileSync } from 'node:fs';
import { logger, type Logger } from '../../lib/log.ts';
import type { Store } from '../../storage/store.ts';
import type { ClusterRecord, KubeObject } from '../../storage/types.ts';
import { crdPrinterColumns, type PrinterColumn } from '../../kube/table.ts';


/** One served resource in one view. */
export interface ResourceInfo {
  group: string;
  version: string;
  resource: string;
  kind: string;
  singularName: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  /** Custom resources: the CRD's additionalPrinterColumns for this version ([] when it has none). */
  printerColumns?: PrinterColumn[];
  /** Member clusters that serve it, sorted. */
  clusters: string[];
  /** Verbs when not the usual get, list, watch. */
  verbs?: string[];
  /** Subresources served (`clusters/status`), with their verbs. */
  subresources?: Array<{ name: string; verbs: string[]; /** The answer's kind when not the resource's (Scale of autoscaling/v1, Eviction of policy/v1). */ kind?: string; group?: string; version?: string }>;
  /** PATCH content types accepted, for the OpenAPI operations (writable resources only). */
  patchTypes?: string[];
}

/** The verbs served on every synced resource. */
export const servedVerbs = ['get', 'list', 'watch'];

export interface GroupEntry {
  name: string;
  /** Versions, preferred first. */
  versions: Array<{ version: string; resources: ResourceInfo[] }>;
}

/** The served API of one view: every cluster (cluster undefined) or one. */
export interface ViewCatalog {
  cluster?: string;
  /** Core group ('') first, then groups by name. */
  groups: GroupEntry[];
  find(group: string, version: string, resource: string): ResourceInfo | undefined;
  /** The group's entry, if served. */
  group(name: string): GroupEntry | undefined;
}

interface Meta {
  kind: string;
  singularName?: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  printerColumns?: PrinterColumn[];
}

type BuiltinResource = { name: string; singularName?: string; namespaced: boolean; kind: string; shortNames?: string[]; categories?: string[] };
const builtin = JSON.parse(readFileSync(new URL('../reference/builtin-resources.json', import.meta.url), 'utf8')) as Record<string, BuiltinResource[]>;
const builtinByGR = new Map<string, BuiltinResource>();
for (const [gv, list] of Object.entries(builtin)) {
  const group = gv.includes('/') ? gv.split('/')[0] : '';
  for (const r of list) builtinByGR.set(`${group}/${r.name}`, r);
}

interface ApiResourceRecord {
  group: string;
  version: string;
  resource: string;
  kind?: string;
  namespaced?: boolean;
  singularName?: string;
  shortNames?: string[];
  categories?: string[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown): string[] | undefined => (Array.isArray(v) && v.every((x) => typeof x === 'string') && v.length ? (v as string[]) : undefined);

function apiResourceRecords(status: Record<string, unknown>): ApiResourceRecord[] {
  const out: ApiResourceRecord[] = [];
  const take = (list: unknown) => {
    if (!Array.isArray(list)) return;
    for (const r of list) {
      if (!isRecord(r) || typeof r.group !== 'string' || typeof r.version !== 'string' || typeof r.resource !== 'string') continue;
      out.push({
        group: r.group,
        version: r.version,
        resource: r.resource,
        kind: typeof r.kind === 'string' ? r.kind : undefined,
        namespaced: typeof r.namespaced === 'boolean' ? r.namespaced : undefined,
        singularName: typeof r.singularName === 'string' ? r.singularName : undefined,
        shortNames: strings(r.shortNames),
        categories: strings(r.categories),
      });
    }
  };
  take(status.apiResources);
  take(status.resources); // the per-resource sync state (group, version, resource only)
  return out;
}

/** CRD facts for one served version. */
function crdEntries(obj: KubeObject): Array<{ group: string; version: string; resource: string; meta: Meta }> {
  const spec = isRecord(obj.spec) ? obj.spec : {};
  const names = isRecord(spec.names) ? spec.names : {};
  if (typeof spec.group !== 'string' || typeof names.plural !== 'string' || typeof names.kind !== 'string') return [];
  const versions = Array.isArray(spec.versions) ? spec.versions.filter(isRecord) : [];
  return versions
    .filter((v) => typeof v.name === 'string' && v.served !== false)
    .map((v) => ({
      group: spec.group as string,
      version: v.name as string,
      resource: names.plural as string,
      meta: {
        kind: names.kind as string,
        singularName: typeof names.singular === 'string' ? names.singular : (names.kind as string).toLowerCase(),
        namespaced: spec.scope !== 'Cluster',
        shortNames: strings(names.shortNames),
        categories: strings(names.categories),
        printerColumns: crdPrinterColumns(v),
      },
    }));
}

function guessKind(resource: string): Meta {
  const singular = resource.endsWith('ies') ? resource.slice(0, -3) + 'y' : resource.endsWith('s') ? resource.slice(0, -1) : resource;
  return { kind: singular.charAt(0).toUpperCase() + singular.slice(1), singularName: singular, namespaced: true };
}

/** One resource a cluster serves, with what discovery says of it. */
interface CatalogEntry {
  cluster: string;
  group: string;
  version: string;
  resource: string;
  meta: Meta;
}

function buildView(cluster: string | undefined, entries: readonly CatalogEntry[]): ViewCatalog {
  // group/resource -> version -> clusters; the version most clusters serve wins.
  const byGR = new Map<string, Map<string, { clusters: Set<string>; meta: Meta }>>();
  for (const e of entries) {
    if (cluster !== undefined && e.cluster !== cluster) continue;
    const key = `${e.group}/${e.resource}`;
    let versions = byGR.get(key);
    if (!versions) byGR.set(key, (versions = new Map()));
    const v = versions.get(e.version);
    if (v) v.clusters.add(e.cluster);
    else versions.set(e.version, { clusters: new Set([e.cluster]), meta: e.meta });
  }
  const groups = new Map<string, Map<string, ResourceInfo[]>>();
  for (const [key, versions] of byGR) {
    const slash = key.indexOf('/');
    const group = key.slice(0, slash);
    const resource = key.slice(slash + 1);
    const [version, chosen] = [...versions].sort((a, b) => b[1].clusters.size - a[1].clusters.size || a[0].localeCompare(b[0]))[0];
    const m = chosen.meta;
    const info: ResourceInfo = {
      group,
      version,
      resource,
      kind: m.kind,
      singularName: m.singularName ?? m.kind.toLowerCase(),
      namespaced: m.namespaced,
      clusters: [...chosen.clusters].sort(),
    };
    if (m.shortNames) info.shortNames = m.shortNames;
    if (m.categories) info.categories = m.categories;
    if (m.printerColumns) info.printerColumns = m.printerColumns;
    let g = groups.get(group);
    if (!g) groups.set(group, (g = new Map()));
    const list = g.get(version) ?? [];
    list.push(info);
    g.set(version, list);
  }
  const out: GroupEntry[] = [...groups]
    .sort((a, b) => (a[0] === '' ? -1 : b[0] === '' ? 1 : a[0].localeCompare(b[0])))
    .map(([name, versions]) => ({
      name,
      versions: [...versions]
        .sort((a, b) => b[1].length - a[1].length || compareVersions(b[0], a[0]))
        .map(([version, resources]) => ({ version, resources: resources.sort((a, b) => a.resource.localeCompare(b.resource)) })),
    }));
  const index = new Map<string, ResourceInfo>();
  for (const g of out) for (const v of g.versions) for (const r of v.resources) index.set(`${g.name}/${v.version}/${r.resource}`, r);
  const byName = new Map(out.map((g) => [g.name, g]));
  return { cluster, groups: out, find: (g, v, r) => index.get(`${g}/${v}/${r}`), group: (name) => byName.get(name) };
}

/** Kubernetes version priority: GA > beta > alpha, then by number. */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return [0, 0, 0];
    return [m[2] === undefined ? 3 : m[2] === 'beta' ? 2 : 1, Number(m[1]), Number(m[3] ?? 0)];
  };
  const [x, y] = [parse(a), parse(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return a.localeCompare(b);
}

export interface CatalogOptions {
  /** Period of the cluster-status and CRD refresh (default 2 s). */
  refreshMs?: number;
  /** Period of the scan of what storage holds, and of the read of every CRD when none changed (default 60 s; each reads much). */
  storedRefreshMs?: number;
  log?: Logger;
}

export class Catalog {
  private views = new Map<string, ViewCatalog>();
  private all: ViewCatalog = buildView(undefined, []);
  private records = new Map<string, ClusterRecord>();
  private known = new Set<string>();
  private stored: Array<{ cluster: string; group: string; version: string; resource: string }> = [];
  private storedAt = 0;
  private probed = new Map<string, Meta>();
  /** The CRDs' facts as last read (crdFacts), and whether a CRD changed since. */
  private crds?: { at: number; crdMeta: Map<string, Meta>; anyCrd: Map<string, Meta> };
  private crdsStale = true;
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private lastForced = 0;
  private soon?: NodeJS.Timeout;
  /** The refresh a change asked for (refreshSoon), until it is done. */
  private pendingSoon?: Promise<void>;
  /** The refresh a miss asked for within 500 ms of the last forced one. */
  private nextMiss?: Promise<void>;
  private readonly log: Logger;
  /** When the last refresh succeeded (ms since the epoch); 0 before the first. */
  loadedAt = 0;
  /** The last refresh error, cleared by a successful one. */
  lastError?: string;

  constructor(
    private readonly store: Store,
    private readonly opts: CatalogOptions = {},
  ) {
    this.log = opts.log ?? logger('apiserver');
  }

  /** First refresh (errors are kept, not thrown), then periodic ones. */
  async start(): Promise<void> {
    await this.refresh();
    const tick = () => {
      this.timer = setTimeout(() => void this.refresh().finally(() => this.timer && tick()), this.opts.refreshMs ?? 2000);
      this.timer.unref?.();
    };
    tick();
  }

  stop(): void {
    clearTimeout(this.timer);
    clearTimeout(this.soon);
    this.timer = undefined;
    this.soon = undefined;
    this.pendingSoon = undefined;
  }

  /** Refreshes now (joins a refresh in flight); never throws. */
  refresh(): Promise<void> {
    this.running ??= this.load()
      .then(() => {
        this.loadedAt = Date.now();
        if (this.lastError) this.log.info('catalog refreshed from storage again');
        this.lastError = undefined;
      })
      .catch((err: Error) => {
        if (this.lastError === undefined) this.log.warn('catalog refresh failed; serving the last known discovery', { error: err.message });
        this.lastError = err.message;
      })
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  /**
   * A refresh that reads storage after this call: one in flight may have read before what the
   * caller knows changed, so it is waited for and another one runs. Never throws.
   */
  private async refreshAfterNow(): Promise<void> {
    if (this.running) await this.running;
    await this.refresh();
  }

  /**
   * Refreshes soon: at once, or 500 ms after the last forced refresh, once however often it is
   * called meanwhile (a Cluster object changed: its cluster's resources may have).
   */
  refreshSoon(): void {
    if (this.pendingSoon) return;
    const wait = Math.max(0, 500 - (Date.now() - this.lastForced));
    this.pendingSoon = new Promise<void>((resolve) => {
      this.soon = setTimeout(() => {
        this.soon = undefined;
        this.lastForced = Date.now();
        void this.refreshAfterNow().finally(() => {
          this.pendingSoon = undefined;
          resolve();
        });
      }, wait);
      this.soon.unref?.();
    });
  }

  /**
   * Resolves once a refresh a change asked for is done, or after `maxWaitMs`: discovery
   * answers what the Cluster objects already say (a cluster shown synced has its resources in
   * discovery), and still answers within a bound while storage is slow.
   */
  async caughtUp(maxWaitMs = 1000): Promise<void> {
    if (!this.pendingSoon) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.pendingSoon, new Promise<void>((r) => (timer = setTimeout(r, maxWaitMs)))]);
    clearTimeout(timer);
  }

  /**
   * Refreshes when something asked for is missing (an unknown cluster or resource), reading
   * storage after the miss, at most every 500 ms: a miss within 500 ms of the last forced
   * refresh waits for the next one.
   */
  async refreshOnMiss(): Promise<void> {
    const wait = 500 - (Date.now() - this.lastForced);
    if (wait <= 0) {
      this.lastForced = Date.now();
      return this.refreshAfterNow();
    }
    this.nextMiss ??= new Promise<void>((r) => setTimeout(r, wait).unref?.()).then(() => {
      this.nextMiss = undefined;
      this.lastForced = Date.now();
      return this.refreshAfterNow();
    });
    return this.nextMiss;
  }

  private async load(): Promise<void> {
    const records = await this.store.listClusters();
    const storedEvery = this.opts.storedRefreshMs ?? 60_000;
    if (this.storedAt === 0 || Date.now() - this.storedAt >= storedEvery) {
      this.stored = await this.store.storedResources();
      this.storedAt = Date.now();
    }
    const { crdMeta, anyCrd } = await this.crdFacts(storedEvery);

    const entries: CatalogEntry[] = [];
    // Each cluster's own, for its view: built from its entries alone, not by scanning the fleet's.
    const byCluster = new Map<string, CatalogEntry[]>();
    const seen = new Set<string>();
    // Synchronous unless a resource is known by nothing but its stored objects (then read once):
    // a fleet's thousands of entries are not as many awaits.
    const add = (cluster: string, r: ApiResourceRecord): Promise<void> | undefined => {
      const id = `${cluster}|${r.group}/${r.resource}`;
      if (seen.has(id)) return;
      seen.add(id);
      const known = this.knownMeta(cluster, r, crdMeta, anyCrd);
      if (known) return void push(cluster, r, known);
      return this.probedMeta(cluster, r).then((meta) => push(cluster, r, meta));
    };
    const push = (cluster: string, r: ApiResourceRecord, meta: Meta) => {
      const e = { cluster, group: r.group, version: r.version, resource: r.resource, meta };
      entries.push(e);
      const own = byCluster.get(cluster);
      if (own) own.push(e);
      else byCluster.set(cluster, [e]);
    };
    for (const rec of records) {
      for (const r of apiResourceRecords(rec.status)) {
        const probing = add(rec.name, r);
        if (probing) await probing;
      }
    }
    for (const s of this.stored) {
      const probing = add(s.cluster, s);
      if (probing) await probing;
    }

    const views = new Map<string, ViewCatalog>();
    const names = new Set([...records.map((r) => r.name), ...this.stored.map((s) => s.cluster)]);
    for (const name of names) views.set(name, buildView(name, byCluster.get(name) ?? []));
    this.records = new Map(records.map((r) => [r.name, r]));
    this.known = names;
    this.views = views;
    this.all = buildView(undefined, entries);
  }

  /**
   * What the fleet's CRDs say of their resources: read again only when a CRD changed
   * (crdsChanged) or `everyMs` passed. Every CRD of every cluster is a large object (its
   * schema): read at every refresh, a fleet's would be read every 2 s by every apiserver.
   */
  private async crdFacts(everyMs: number): Promise<{ crdMeta: Map<string, Meta>; anyCrd: Map<string, Meta> }> {
    if (this.crds && !this.crdsStale && Date.now() - this.crds.at < everyMs) return this.crds;
    // A change that comes while they are read asks for the next read.
    this.crdsStale = false;
    const at = Date.now();
    const crdMeta = new Map<string, Meta>(); // cluster|group/version/resource
    const anyCrd = new Map<string, Meta>(); // group/version/resource
    try {
      const crds = await this.store.list({ group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions' });
      for (const item of crds.items) {
        for (const e of crdEntries(JSON.parse(item.object) as KubeObject)) {
          crdMeta.set(`${item.cluster}|${e.group}/${e.version}/${e.resource}`, e.meta);
          anyCrd.set(`${e.group}/${e.version}/${e.resource}`, e.meta);
        }
      }
    } catch (err) {
      this.crdsStale = true;
      throw err;
    }
    this.crds = { at, crdMeta, anyCrd };
    return this.crds;
  }

  /** A CustomResourceDefinition of some cluster changed (the change stream says): the next refresh reads them again, soon. */
  crdsChanged(): void {
    this.crdsStale = true;
    this.refreshSoon();
  }

  /** What the cluster's record, its CRDs or kube's built-ins say of a resource; undefined when none does. */
  private knownMeta(cluster: string, r: ApiResourceRecord, crdMeta: Map<string, Meta>, anyCrd: Map<string, Meta>): Meta | undefined {
    const gvr = `${r.group}/${r.version}/${r.resource}`;
    const crd = crdMeta.get(`${cluster}|${gvr}`) ?? anyCrd.get(gvr);
    const base = builtin[r.group ? `${r.group}/${r.version}` : r.version]?.find((b) => b.name === r.resource) ?? builtinByGR.get(`${r.group}/${r.resource}`);
    if (r.kind !== undefined && r.namespaced !== undefined) {
      return {
        kind: r.kind,
        namespaced: r.namespaced,
        singularName: r.singularName ?? crd?.singularName ?? base?.singularName,
        shortNames: r.shortNames ?? crd?.shortNames ?? base?.shortNames,
        categories: r.categories ?? crd?.categories ?? base?.categories,
        printerColumns: crd?.printerColumns,
      };
    }
    if (crd) return crd;
    if (base) return { kind: base.kind, namespaced: base.namespaced, singularName: base.singularName, shortNames: base.shortNames, categories: base.categories };
    return undefined;
  }

  /** Nothing recorded: kind and scope learnt from one stored object (once). */
  private async probedMeta(cluster: string, r: ApiResourceRecord): Promise<Meta> {
    const key = `${r.group}/${r.resource}`;
    let m = this.probed.get(key);
    if (!m) {
      const one = await this.store.list({ group: r.group, resource: r.resource, clusters: [cluster], limit: 1 });
      const item = one.items[0];
      const guess = guessKind(r.resource);
      if (item) {
        const obj = JSON.parse(item.object) as KubeObject;
        m = { ...guess, kind: typeof obj.kind === 'string' && obj.kind ? obj.kind : guess.kind, namespaced: item.namespace !== '' };
        this.probed.set(key, m);
      } else m = guess;
    }
    return m;
  }

  /** The all-clusters view, or one cluster's; undefined for a cluster that is not known. */
  view(cluster?: string): ViewCatalog | undefined {
    return cluster === undefined ? this.all : this.views.get(cluster);
  }

  /** Registered clusters and clusters with data, sorted. */
  clusterNames(): string[] {
    return [...this.known].sort();
  }

  hasCluster(name: string): boolean {
    return this.known.has(name);
  }

  /** The cluster's registration and status row, if registered. */
  cluster(name: string): ClusterRecord | undefined {
    return this.records.get(name);
  }
}
