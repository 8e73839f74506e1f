// get by name. One-cluster view: that cluster's object. All-clusters view: the object when
// exactly one cluster has it, a 400 naming the clusters when several do (apiserver/README.md "URLs");
// the clusters query parameter narrows the search.
import { StatusError, notFound } from '../../kube/status.ts';
import type { KubeObject, StoredObject } from '../../storage/types.ts';
import type { Deps, Reply } from '../endpoints/deps.ts';
import { clustersRead } from './list-query.ts';
import type { ResourceRequest } from '../endpoints/request.ts';
import { readFresh } from './rv.ts';
import { toPartialObjectMetadata } from '../../kube/table.ts';
import { tableJson, tableRenderer, tableRowJson } from './table.ts';
import { staleWarnings } from '../endpoints/warnings.ts';

const qualified = (r: ResourceRequest) => (r.info.group ? `${r.info.resource}.${r.info.group}` : r.info.resource);

export async function serveGet(deps: Deps, req: ResourceRequest): Promise<Reply> {
  const name = req.name!;
  const namespace = req.info.namespaced ? (req.namespace ?? '') : '';
  const p = req.params;
  const missing = () => notFound(`${qualified(req)} "${name}" not found`, { name, ...(req.info.group ? { group: req.info.group } : {}), kind: req.info.resource });

  const clusters = clustersRead(req, req.info.clusters);
  let item: StoredObject | undefined;
  let readWarnings: string[];
  if (req.view.cluster !== undefined) {
    if (!clusters.includes(req.view.cluster)) throw missing();
    const key = { cluster: req.view.cluster, group: req.info.group, resource: req.info.resource, namespace, name };
    ({ value: item, warnings: readWarnings } = await readFresh(deps, p, (store, minRv) => store.get(key, minRv)));
  } else {
    const q = { group: req.info.group, resource: req.info.resource, namespaces: [namespace], names: [name], ...(p.search.clusters ? { clusters: p.search.clusters } : {}) };
    const { value: found, warnings } = await readFresh(deps, p, (store, minRv) => store.list(minRv === undefined ? q : { ...q, minRv }));
    readWarnings = warnings;
    if (found.items.length > 1) {
      const where = found.items.map((i) => i.cluster);
      throw new StatusError(
        'BadRequest',
        `${qualified(req)} "${name}"${namespace ? ` in namespace "${namespace}"` : ''} exists in ${where.length} clusters (${where.join(', ')}): get it from one cluster at .../resources/clusters/<cluster>/..., or add ?clusters=<cluster>`,
        { name, ...(req.info.group ? { group: req.info.group } : {}), kind: req.info.resource, causes: where.map((c) => ({ reason: 'FieldValueDuplicate', field: 'clusters', message: c })) },
      );
    }
    item = found.items[0];
  }
  if (!item) throw missing();

  const out = req.output;
  let body: string;
  if (out.kind === 'json') body = item.object;
  else {
    const obj = JSON.parse(item.object) as KubeObject;
    if (out.kind === 'partial') body = JSON.stringify(toPartialObjectMetadata(obj, out.metaVersion));
    else {
      const r = tableRenderer(req.info, req.view);
      body = tableJson(r, out.metaVersion, { resourceVersion: String(item.rv) }, [tableRowJson(r, req.info, obj, item.object, item.cluster, out, Date.now())]);
    }
  }
  const warnings = [...readWarnings, ...staleWarnings(deps.catalog, [item.cluster])];
  return { type: out.contentType, body, headers: warnings.length ? { Warning: warnings } : undefined };
}
