// The clusters the ClusterSources describe, as every synchro process with a host cluster sees
// them: the collections each source reads are listed and watched (member/list-watch.ts,
// one watch per collection however many sources read it), and each source's candidates
// (synchro/import/sources/) are named into the Clusters it imports. Two readers use it: the
// shards, which take an imported Cluster's connection from here (the credentials stay in the
// source Secret: read where they are, never copied into storage), and the holder of the
// importer lease, which writes the Cluster objects and the ClusterSource status
// (synchro/import/apply.ts). Level-triggered: any change of any source object recomputes all.
import { withDefaults, type ClusterSourceSpec, type SourceType } from '../../api/cluster-source.ts';
import type { Logger } from '../../lib/log.ts';
import type { ClusterClient } from '../../member/client.ts';
import type { OwnObjectState } from '../../storage/own-objects.ts';
import { describe, type ImportCandidate, type SourceKind, type SourceObjects } from './candidate.ts';
import { ListWatch } from '../../member/list-watch.ts';
import { clusterName } from './naming.ts';
import { argoCD } from './sources/argocd.ts';
import { clusterAPI } from './sources/cluster-api.ts';
import { karmada } from './sources/karmada.ts';
import { kubeconfigSecrets } from './sources/kubeconfig-secrets.ts';
import { clusterProfiles } from './sources/cluster-profiles.ts';
import { ExecCredentials, type ExecProvider } from './exec-credentials.ts';

const kinds: Record<SourceType, SourceKind> = { clusterAPI, argoCD, karmada, kubeconfigSecrets, clusterProfiles };

/** One Cluster a source imports: its candidate, under its name. */
export interface ImportedCluster extends ImportCandidate {
  name: string;
}

/** What a source makes of its objects now. */
export type SourceView =
  | { state: 'pending' }
  | { state: 'error'; message: string }
  | {
      state: 'known';
      clusters: Map<string, ImportedCluster>;
      unnamed: Array<{ object: string; message: string }>;
      duplicates: Array<{ object: string; cluster: string }>;
      note?: string;
      /** CRDs of kinds the source reads that the host cluster does not serve, and what that means. */
      missingCRDs?: Array<{ name: string; without: string }>;
    };

export interface ImporterOptions {
  client: ClusterClient;
  log: Logger;
  /** Some source object came, changed or went. */
  onChange: () => void;
  /** Full relist of every collection this often, even when its watch is quiet (default 10 minutes). */
  resyncMs?: number;
  /** The exec providers of ClusterProfile access the operator configured (--clusterprofile-provider-file). */
  execProviders?: ExecProvider[];
  /** This installation's id (Store.installationId). */
  installation?: string;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export class Importer {
  private readonly watches = new Map<string, ListWatch>();
  private sources = new Map<string, ClusterSourceSpec>();
  /** Views computed since the last change (a pass asks for each many times). */
  private readonly views = new Map<string, SourceView>();
  private readonly exec: ExecCredentials;

  constructor(private readonly opts: ImporterOptions) {
    this.exec = new ExecCredentials(opts.execProviders ?? [], { onChange: () => this.changed() });
  }

  /** Follows these ClusterSources (each pass): the collections they read are watched, the others stopped. */
  follow(objects: OwnObjectState[]): void {
    this.views.clear();
    this.sources = new Map(objects.filter((o) => isRecord(o.object.spec)).map((o) => [o.name, o.object.spec as unknown as ClusterSourceSpec]));
    const wanted = new Set<string>();
    for (const spec of this.sources.values()) {
      const kind = kinds[spec.type];
      if (!kind || !Array.isArray(spec.namespaces)) continue;
      for (const c of kind.collections(spec)) {
        const key = `${c.path}?${c.labelSelector}`;
        wanted.add(key);
        if (!this.watches.has(key)) {
          this.watches.set(key, new ListWatch({ client: this.opts.client, path: c.path, labelSelector: c.labelSelector, log: this.opts.log, onChange: () => this.changed(), resyncMs: this.opts.resyncMs ?? 600_000 }));
        }
      }
    }
    for (const [key, w] of this.watches) {
      if (wanted.has(key)) continue;
      this.watches.delete(key);
      void w.stop();
    }
  }

  private changed(): void {
    this.views.clear();
    this.opts.onChange();
  }

  async stop(): Promise<void> {
    this.exec.stop();
    const all = [...this.watches.values()];
    this.watches.clear();
    await Promise.all(all.map((w) => w.stop()));
    this.opts.client.close();
  }

  /** What source `name` imports now (undefined: no such ClusterSource is followed). */
  view(name: string): SourceView | undefined {
    const cached = this.views.get(name);
    if (cached) return cached;
    const v = this.compute(name);
    if (v) this.views.set(name, v);
    return v;
  }

  private compute(name: string): SourceView | undefined {
    const spec = this.sources.get(name);
    if (!spec) return undefined;
    const kind = kinds[spec.type];
    if (!kind) return { state: 'error', message: `unknown source type ${String(spec.type)}` };
    const objects: SourceObjects = { secrets: [], clusters: [] };
    const notes: string[] = [];
    const missingCRDs = new Map<string, { name: string; without: string }>();
    for (const c of kind.collections(spec)) {
      const s = this.watches.get(`${c.path}?${c.labelSelector}`)?.state() ?? { state: 'pending' as const };
      if (s.state !== 'known') return s;
      objects[c.role].push(...s.items);
      if (s.notServed && c.crd) missingCRDs.set(c.crd.name, c.crd);
      else if (s.note) notes.push(s.note);
    }
    const naming = withDefaults(spec).naming;
    const clusters = new Map<string, ImportedCluster>();
    const unnamed: Array<{ object: string; message: string }> = [];
    const duplicates: Array<{ object: string; cluster: string }> = [];
    const candidates = kind.candidates(spec, objects, { exec: this.exec, ...(this.opts.installation ? { installation: this.opts.installation } : {}) }).sort((a, b) => describe(a.sourceObject).localeCompare(describe(b.sourceObject)));
    for (const c of candidates) {
      const n = clusterName(c, naming);
      if ('problem' in n) unnamed.push({ object: describe(c.sourceObject), message: n.problem });
      else if (clusters.has(n.name)) duplicates.push({ object: describe(c.sourceObject), cluster: n.name });
      else clusters.set(n.name, { ...c, name: n.name });
    }
    return { state: 'known', clusters, unnamed, duplicates, ...(notes.length ? { note: notes.join('; ') } : {}), ...(missingCRDs.size ? { missingCRDs: [...missingCRDs.values()] } : {}) };
  }

  /** The spec of ClusterSource `name`, as followed. */
  spec(name: string): ClusterSourceSpec | undefined {
    return this.sources.get(name);
  }
}
