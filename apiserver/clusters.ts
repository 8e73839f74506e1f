// Panoptes's own group, panoptes.io/v1alpha1, and its Cluster resource: one object per member
// cluster, spec as configured (secrets redacted by synchro), status as synchro writes it
// (health and per-resource sync state). list and get; unknown cluster: 404.
import { matchesFields } from '../kube/fields.ts';
import { matchesLabels } from '../kube/labels.ts';
import { notFound } from '../kube/status.ts';
import type { ClusterRecord, KubeObject } from '../storage/types.ts';
import type { Catalog, GroupEntry, ResourceInfo } from './catalog.ts';
import type { Reply } from './deps.ts';
import { humanDuration } from '../kube/printers.ts';
import { toPartialObjectMetadata } from '../kube/table.ts';
import type { OutputFormat, ListParams } from './request.ts';
import { tableJson, type TableRenderer } from './table.ts';

export const panoptesGroupName = 'panoptes.io';
export const panoptesVersion = 'v1alpha1';
export const panoptesApiVersion = `${panoptesGroupName}/${panoptesVersion}`;

export const clusterInfo: ResourceInfo = {
  group: panoptesGroupName,
  version: panoptesVersion,
  resource: 'clusters',
  kind: 'Cluster',
  singularName: 'cluster',
  namespaced: false,
  clusters: [],
  verbs: ['get', 'list'],
};

export const panoptesGroup: GroupEntry = { name: panoptesGroupName, versions: [{ version: panoptesVersion, resources: [clusterInfo] }] };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The Cluster object of a clusters-table row (or of a cluster that only has data in storage). */
export function clusterObject(name: string, rec: ClusterRecord | undefined): KubeObject {
  return {
    apiVersion: panoptesApiVersion,
    kind: 'Cluster',
    metadata: { name, ...(rec ? { creationTimestamp: rec.createdAt.replace(/\.\d{3}Z$/, 'Z') } : {}) },
    spec: rec?.spec ?? {},
    status: rec?.status ?? { phase: 'Unknown', ready: false, reason: 'NotRegistered', message: 'objects are stored for this cluster, but it is not registered (synchro does not sync it)' },
  };
}

/** Columns of `kubectl get clusters`. */
export const clusterTable: TableRenderer = {
  columns: [
    { name: 'Name', type: 'string', format: 'name', description: 'The member cluster name', priority: 0 },
    { name: 'Phase', type: 'string', format: '', description: 'Pending, Ready, Unreachable or Invalid', priority: 0 },
    { name: 'Ready', type: 'string', format: '', description: 'Whether its last readiness probe succeeded', priority: 0 },
    { name: 'Synced', type: 'string', format: '', description: 'Resources whose initial list is stored, of those selected', priority: 0 },
    { name: 'Objects', type: 'integer', format: '', description: 'Objects in sync', priority: 0 },
    { name: 'Age', type: 'string', format: '', description: 'Time since the cluster was registered', priority: 0 },
    { name: 'Server', type: 'string', format: '', description: 'The member API server', priority: 1 },
    { name: 'Owner', type: 'string', format: '', description: 'The synchro process writing for this cluster', priority: 1 },
    { name: 'Epoch', type: 'integer', format: '', description: 'The fencing epoch of its lease: grows with every handover', priority: 1 },
    { name: 'Message', type: 'string', format: '', description: 'The last health message', priority: 1 },
  ],
  cells(o, _cluster, now) {
    const s = isRecord(o.status) ? o.status : {};
    const init = isRecord(s.initialSync) ? s.initialSync : {};
    const owner = isRecord(s.owner) ? s.owner : {};
    const created = o.metadata?.creationTimestamp ? Date.parse(o.metadata.creationTimestamp) : NaN;
    return [
      o.metadata?.name ?? '',
      typeof s.phase === 'string' ? s.phase : 'Unknown',
      s.ready === true ? 'True' : 'False',
      `${Number(init.resourcesSynced ?? 0)}/${Number(init.resourcesTotal ?? 0)}`,
      Number(init.objects ?? 0),
      Number.isNaN(created) ? '<unknown>' : humanDuration(now - created),
      typeof s.server === 'string' ? s.server : '',
      typeof owner.member === 'string' ? owner.member : '<none>',
      typeof owner.epoch === 'number' ? owner.epoch : 0,
      typeof s.message === 'string' ? s.message : '',
    ];
  },
};

function render(obj: KubeObject, output: OutputFormat): string {
  if (output.kind === 'partial') return JSON.stringify(toPartialObjectMetadata(obj, output.metaVersion));
  return JSON.stringify(obj);
}

function rowJson(obj: KubeObject, output: OutputFormat, now: number): string {
  let row = `{"cells":${JSON.stringify(clusterTable.cells(obj, '', now))}`;
  if (output.includeObject === 'Object') row += `,"object":${JSON.stringify(obj)}`;
  else if (output.includeObject === 'Metadata') row += `,"object":${JSON.stringify(toPartialObjectMetadata(obj, output.metaVersion))}`;
  return row + '}';
}

export interface ClustersRequest {
  /** get: the cluster; list: undefined. */
  name?: string;
  /** One-cluster view: only that cluster is listed. */
  viewCluster?: string;
  params: ListParams;
  output: OutputFormat;
  /** The storage watermark, as the list's resourceVersion. */
  resourceVersion: string;
}

/** GET .../clusters and .../clusters/NAME. */
export async function serveClusters(catalog: Catalog, req: ClustersRequest): Promise<Reply> {
  const now = Date.now();
  if (req.name !== undefined) {
    if (!catalog.hasCluster(req.name) || (req.viewCluster !== undefined && req.viewCluster !== req.name)) await catalog.refreshOnMiss();
    if (!catalog.hasCluster(req.name) || (req.viewCluster !== undefined && req.viewCluster !== req.name)) {
      throw notFound(`clusters.${panoptesGroupName} "${req.name}" not found`, { name: req.name, group: panoptesGroupName, kind: 'clusters' });
    }
    const obj = clusterObject(req.name, catalog.cluster(req.name));
    const body = req.output.kind === 'table' ? tableJson(clusterTable, req.output.metaVersion, { resourceVersion: '' }, [rowJson(obj, req.output, now)]) : render(obj, req.output);
    return { type: req.output.contentType, body };
  }
  const p = req.params;
  const objects = catalog
    .clusterNames()
    .filter((n) => req.viewCluster === undefined || n === req.viewCluster)
    .filter((n) => !p.search.clusters || p.search.clusters.includes(n))
    .filter((n) => !p.search.names || p.search.names.includes(n))
    .map((n) => clusterObject(n, catalog.cluster(n)))
    .filter((o) => matchesLabels(p.labelSelector, o.metadata?.labels as Record<string, string> | undefined))
    .filter((o) => matchesFields(p.fieldSelector, panoptesGroupName, 'clusters', o));
  const listMeta = { resourceVersion: req.resourceVersion };
  let body: string;
  if (req.output.kind === 'table') {
    body = tableJson(clusterTable, req.output.metaVersion, listMeta, objects.map((o) => rowJson(o, req.output, now)));
  } else if (req.output.kind === 'partial') {
    body = JSON.stringify({ kind: 'PartialObjectMetadataList', apiVersion: `meta.k8s.io/${req.output.metaVersion}`, metadata: listMeta, items: objects.map((o) => toPartialObjectMetadata(o, req.output.metaVersion)) });
  } else {
    body = JSON.stringify({ kind: 'ClusterList', apiVersion: panoptesApiVersion, metadata: listMeta, items: objects });
  }
  return { type: req.output.contentType, body };
}
