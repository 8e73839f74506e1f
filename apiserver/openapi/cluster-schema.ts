// The OpenAPI schemas (Swagger 2.0 form) of Panoptes's own kinds, Cluster and ClusterList
// (panoptes.io/v1alpha1), as apiserver/clusters.ts serves them: the spec is the clusters.yaml
// entry with secrets redacted (synchro/config.ts publicSpec), the status what synchro writes
// (synchro/cluster.ts ClusterStatus). The object and list metadata definitions come from the
// captured kube-apiserver 1.28 document (apiserver/reference/openapi-meta.json).
import { readFileSync } from 'node:fs';
import type { JsonObject } from '../../kube/openapi-convert.ts';

const meta = JSON.parse(readFileSync(new URL('../reference/openapi-meta.json', import.meta.url), 'utf8')) as { definitions: Record<string, JsonObject> };

/** ObjectMeta, ListMeta, WatchEvent and the definitions they refer to (v2 form). */
export const metaDefinitions: Record<string, JsonObject> = meta.definitions;

export const objectMetaName = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';
export const listMetaName = 'io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta';
export const watchEventName = 'io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent';

const p = 'io.panoptes.v1alpha1.';
const ref = (name: string, description: string) => ({ $ref: `#/definitions/${name}`, description });
const str = (description: string, extra: JsonObject = {}) => ({ type: 'string', description, ...extra });
const time = (description: string) => str(description, { format: 'date-time' });
const int = (description: string) => ({ type: 'integer', format: 'int64', description });
const bool = (description: string) => ({ type: 'boolean', description });
const strings = (description: string) => ({ type: 'array', description, items: { type: 'string' } });
const list = (name: string, description: string) => ({ type: 'array', description, items: { $ref: `#/definitions/${p}${name}` } });
const typeMeta = {
  apiVersion: str('APIVersion defines the versioned schema of this representation of an object: panoptes.io/v1alpha1.'),
  kind: str('Kind is a string value representing the REST resource this object represents.'),
};
const gvk = (kind: string) => [{ group: 'panoptes.io', kind, version: 'v1alpha1' }];
const redacted = 'Served as "(redacted)" when set: credentials are never served back.';

export const clusterDefinitions: Record<string, JsonObject> = {
  [`${p}Cluster`]: {
    description: 'Cluster is a member cluster Panoptes syncs: its registration (spec) and its health and per-resource sync state (status).',
    type: 'object',
    properties: {
      ...typeMeta,
      metadata: ref(objectMetaName, "Standard object's metadata. The name is the member cluster's name in Panoptes URLs and in the panoptes.io/cluster annotation."),
      spec: ref(`${p}ClusterSpec`, 'The registration as configured (clusters.yaml entry or kubeconfig context), secrets redacted.'),
      status: ref(`${p}ClusterStatus`, 'What synchro observed: health, initial sync progress, synced resources. Written by synchro alone.'),
    },
    'x-kubernetes-group-version-kind': gvk('Cluster'),
  },
  [`${p}ClusterList`]: {
    description: 'ClusterList is a list of Cluster.',
    type: 'object',
    required: ['items'],
    properties: {
      ...typeMeta,
      items: list('Cluster', 'The member clusters.'),
      metadata: ref(listMetaName, 'Standard list metadata.'),
    },
    'x-kubernetes-group-version-kind': gvk('ClusterList'),
  },
  [`${p}ClusterSpec`]: {
    description: 'ClusterSpec says how to reach a member cluster and what to sync from it.',
    type: 'object',
    properties: {
      name: str('The member cluster name: a DNS label.'),
      kubeconfig: str('Path of a kubeconfig file to connect with (relative paths are relative to clusters.yaml).'),
      context: str("The kubeconfig context to use (the kubeconfig's current context otherwise)."),
      server: str('URL of the member API server, for inline connection settings.'),
      certificateAuthority: str('Path of the CA bundle that signs the server certificate.'),
      certificateAuthorityData: str(`The CA bundle, base64. ${redacted}`),
      token: str(`Bearer token. ${redacted}`),
      tokenFile: str('Path of a file holding the bearer token (re-read every minute).'),
      clientCertificate: str('Path of a client certificate.'),
      clientCertificateData: str(`Client certificate, base64. ${redacted}`),
      clientKey: str('Path of the client certificate key.'),
      clientKeyData: str(`Client certificate key, base64. ${redacted}`),
      insecureSkipTLSVerify: bool('Skip verification of the server certificate.'),
      tlsServerName: str('Server name to verify the server certificate against.'),
      resources: strings('Resource patterns to sync: *, GROUP/*, GROUP/RESOURCE or RESOURCE.GROUP (secrets only when named).'),
      namespaces: ref(`${p}ClusterNamespaceFilter`, 'Which namespaces namespaced objects are synced from.'),
    },
  },
  [`${p}ClusterNamespaceFilter`]: {
    description: 'Namespaces to include or exclude (namespaced objects, and Namespace objects by name).',
    type: 'object',
    properties: { include: strings('Only these namespaces.'), exclude: strings('Never these namespaces.') },
  },
  [`${p}ClusterStatus`]: {
    description: 'ClusterStatus is the health and sync state synchro records for a member cluster.',
    type: 'object',
    properties: {
      phase: str('Pending, Ready, Unreachable or Invalid; Unknown for a cluster that only has stored objects.', { enum: ['Pending', 'Ready', 'Unreachable', 'Invalid', 'Unknown'] }),
      ready: bool('Whether the last readiness probe succeeded.'),
      reason: str('Why the cluster is in its phase: ProbeSucceeded, ProbeFailed, InvalidConfig, Starting, NotRegistered.'),
      message: str('Details of the last transition or probe.'),
      lastTransitionTime: time('When the phase or reason last changed.'),
      lastProbeTime: time('When the readiness probe last ran.'),
      server: str('The member API server URL.'),
      conditions: list('ClusterCondition', 'The Ready condition.'),
      initialSync: ref(`${p}ClusterInitialSync`, 'Progress of the first list of every selected resource.'),
      resources: list('ClusterResourceStatus', 'Sync state of every synced resource.'),
      apiResources: list('ClusterAPIResource', "The synced resources as the member's discovery describes them."),
      discoveryErrors: { type: 'object', description: 'Groups whose discovery failed, with the error.', additionalProperties: { type: 'string' } },
      configError: str('The problem with the configuration file while its last good version is in effect.'),
      openapi: ref(`${p}ClusterOpenAPIStatus`, 'The OpenAPI documents of the synced group versions, stored for kubectl explain and validation.'),
      warnings: strings('What is weak about the connection, e.g. a plain-HTTP server.'),
      owner: ref(`${p}ClusterOwner`, 'The synchro process writing for this cluster.'),
    },
  },
  [`${p}ClusterOwner`]: {
    description: 'The synchro process that holds the cluster lease, and the lease epoch (it grows with every handover; writes of older epochs are refused).',
    type: 'object',
    properties: {
      member: str('The identity of the synchro process.'),
      epoch: int('The fencing epoch of its lease.'),
      acquiredAt: time('When it acquired the lease.'),
    },
  },
  [`${p}ClusterCondition`]: {
    description: 'A condition of the cluster.',
    type: 'object',
    required: ['type', 'status'],
    properties: {
      type: str('Condition type: Ready.'),
      status: str('True, False or Unknown.', { enum: ['True', 'False', 'Unknown'] }),
      reason: str('Machine-readable reason.'),
      message: str('Human-readable details.'),
      lastTransitionTime: time('When the condition last changed.'),
    },
  },
  [`${p}ClusterInitialSync`]: {
    description: 'Progress of the initial sync.',
    type: 'object',
    properties: {
      resourcesSynced: int('Resources whose initial list is stored.'),
      resourcesTotal: int('Resources selected at the first discovery.'),
      objects: int('Objects in sync.'),
      complete: bool('Whether every selected resource finished its initial list.'),
      startedAt: time('When the initial sync started.'),
      completedAt: time('When the initial sync completed.'),
    },
  },
  [`${p}ClusterResourceStatus`]: {
    description: 'Sync state of one resource.',
    type: 'object',
    properties: {
      group: str('API group ("" for core).'),
      version: str('Version synced (the group\'s preferred version).'),
      resource: str('Resource name (plural).'),
      state: str('syncing, synced or error.', { enum: ['syncing', 'synced', 'error'] }),
      objects: int('Objects in sync.'),
      lastEventTime: time('When the last event was received.'),
      lastSyncTime: time('When the last full list was stored.'),
      error: str('The last error.'),
      errorTime: time('When the last error happened.'),
    },
  },
  [`${p}ClusterAPIResource`]: {
    description: 'A synced resource as discovery describes it.',
    type: 'object',
    properties: {
      group: str('API group ("" for core).'),
      version: str('Version synced.'),
      resource: str('Resource name (plural).'),
      kind: str('Kind of its objects.'),
      namespaced: bool('Whether its objects live in namespaces.'),
      singularName: str('Singular name.'),
      shortNames: strings('Short names (kubectl aliases).'),
      categories: strings('Categories (such as all).'),
    },
  },
  [`${p}ClusterOpenAPIStatus`]: {
    description: 'The OpenAPI documents Panoptes keeps for a member cluster.',
    type: 'object',
    properties: {
      format: str('v3 (one document per group version), v2 (one whole document: the member serves no v3) or none.', { enum: ['v3', 'v2', 'none'] }),
      documents: int('Documents stored for the cluster.'),
      missing: strings('Synced group versions the member publishes no document for.'),
      lastSyncTime: time('When the documents were last checked.'),
      error: str('The last fetch error.'),
    },
  },
};
