// The OpenAPI schemas (Swagger 2.0 form) of Panoptes's own kinds, Cluster and ClusterList
// (panoptes.io/v1alpha1), as apiserver/discovery/panoptes-group.ts serves them: the spec of an API-registered
// cluster (api/cluster.ts; inline credentials write-only), the clusters.yaml keys a
// file cluster's spec shows (the allowlist of api/cluster.ts servedSpec, secrets redacted), and the status
// synchro writes (synchro/cluster/cluster.ts ClusterStatus, synchro/cluster/cluster-objects.ts). Built from the
// blocks of own-schema.ts.
import type { JsonObject } from '../../../kube/openapi-convert.ts';
import { bool, conditionDefinition, gvk, int, list, listDefinition, objectMetaName, p, ref, str, strings, time, typeMeta } from '../../openapi/own-schema.ts';

const redacted = 'clusters.yaml only; served as "(redacted)" when set: credentials are never served back.';
const writeOnly = 'Write-only: stored where only synchro reads it, never served back (not by get, list, watch, Table, nor the last-applied annotation).';
const fileOnly = 'clusters.yaml only (the API refuses file references):';

export const clusterDefinitions: Record<string, JsonObject> = {
  [`${p}Cluster`]: {
    description: 'Cluster is a member cluster Panoptes syncs: its registration (spec) and its health and per-resource sync state (status).',
    type: 'object',
    properties: {
      ...typeMeta,
      metadata: ref(objectMetaName, "Standard object's metadata. The name (a DNS label) is the member cluster's name in Panoptes URLs and in the panoptes.io/cluster annotation."),
      spec: ref(`${p}ClusterSpec`, 'How to reach the member cluster and what to sync: written through the API (source: api), or a clusters.yaml entry (source: file, read-only).'),
      status: ref(`${p}ClusterStatus`, 'What synchro observed: health, initial sync progress, synced resources. Written by synchro alone.'),
    },
    'x-kubernetes-group-version-kind': gvk('Cluster'),
  },
  [`${p}ClusterList`]: listDefinition('Cluster', 'The member clusters.'),
  [`${p}ClusterSpec`]: {
    description: 'ClusterSpec says how to reach a member cluster and what to sync from it.',
    type: 'object',
    properties: {
      source: str(
        'api (registered through this API; the default), file (a clusters.yaml entry or kubeconfig context of synchro: read-only through the API), or clustersource/<name> (imported by that ClusterSource: its spec cannot be changed through the API).',
      ),
      sourceObject: ref(`${p}ClusterSourceObject`, 'Imported Clusters: the object of the host cluster the Cluster comes from. Set by Panoptes.'),
      server: str(
        'URL of the member API server, e.g. https://10.0.0.1:6443 (required through the API). Not a loopback, link-local or unspecified address unless the operator allows it (--allow-member-networks); plain http:// only without credentials, or to an address inside that allowance. With inline credentials stored, it changes only with new credentials (as caData, insecureSkipTLSVerify and tlsServerName).',
      ),
      caData: str('The CA bundle that signs the server certificate: base64 PEM, as certificate-authority-data in a kubeconfig. Without it, the system roots (or ca.crt of the credentials Secret).'),
      insecureSkipTLSVerify: bool('Skip verification of the server certificate (not with caData).'),
      tlsServerName: str('Server name to verify the server certificate against.'),
      resources: strings('Resource patterns to sync: *, GROUP/*, GROUP/RESOURCE or RESOURCE.GROUP (secrets only when named). Default: a set of common resources.'),
      namespaces: ref(`${p}ClusterNamespaceFilter`, 'Which namespaces namespaced objects are synced from.'),
      credentials: ref(`${p}ClusterCredentials`, 'How synchro authenticates to the member: a Secret of the host cluster, or inline (write-only) values. None: anonymous.'),
      multiClusterServices: ref(`${p}ClusterMultiClusterServices`, 'Whether the cluster may provide and consume multi-cluster Services: granted by the operator.'),
      kubeconfig: str(`${fileOnly} path of a kubeconfig file to connect with.`),
      context: str(`${fileOnly} the kubeconfig context to use.`),
      certificateAuthority: str(`${fileOnly} path of the CA bundle.`),
      certificateAuthorityData: str(`The CA bundle, base64. ${redacted}`),
      token: str(`Bearer token. ${redacted}`),
      tokenFile: str(`${fileOnly} path of a file holding the bearer token (re-read every minute).`),
      clientCertificate: str(`${fileOnly} path of a client certificate.`),
      clientCertificateData: str(`Client certificate, base64. ${redacted}`),
      clientKey: str(`${fileOnly} path of the client certificate key.`),
      clientKeyData: str(`Client certificate key, base64. ${redacted}`),
    },
  },
  [`${p}ClusterCredentials`]: {
    description: 'Credentials of a member cluster: secretRef, or inline token and/or clientCertData with clientKeyData.',
    type: 'object',
    properties: {
      secretRef: ref(
        `${p}ClusterSecretRef`,
        'A Secret in the namespace Panoptes runs in, labelled panoptes.io/cluster=<this cluster> and annotated panoptes.io/server=<spec.server> (or "*" for any server), with keys token, tls.crt and tls.key, ca.crt, or kubeconfig. Its CA, when it has one, is the only one the server is verified with. synchro follows its rotation.',
      ),
      sourceSecretRef: ref(`${p}ClusterSourceSecretRef`, 'Imported Clusters only (set by Panoptes): the source Secret holding the credentials, read where it is, never copied.'),
      token: str(`Bearer token. ${writeOnly}`),
      clientCertData: str(`Client certificate, base64 PEM (as client-certificate-data in a kubeconfig). ${writeOnly}`),
      clientKeyData: str(`Client key, base64 PEM (as client-key-data in a kubeconfig). ${writeOnly}`),
    },
  },
  [`${p}ClusterMultiClusterServices`]: {
    description:
      'The multi-cluster Service roles granted to the cluster. Absent fields: true for a clusters.yaml entry (source: file), false for a Cluster of the API or of a ClusterSource. A write that grants a role needs update on clusters/multiclusterservices of the Cluster (clustersources/multiclusterservices for a ClusterSource\'s defaults) besides the write itself.',
    type: 'object',
    properties: {
      provider: bool("Its Services' endpoints may be dispatched into other clusters (a MultiClusterService naming it, or a ServiceExport in it)."),
      consumer: bool('Panoptes may write dispatched Services, EndpointSlices and ServiceImports into it, with its own identity.'),
    },
  },
  [`${p}ClusterSecretRef`]: {
    description: 'A Secret of the host cluster, in the namespace Panoptes runs in.',
    type: 'object',
    required: ['name'],
    properties: { name: str('The name of the Secret.') },
  },
  [`${p}ClusterSourceSecretRef`]: {
    description: 'A Secret of the host cluster in a namespace a ClusterSource reads.',
    type: 'object',
    properties: { namespace: str('Its namespace.'), name: str('Its name.') },
  },
  [`${p}ClusterSourceObject`]: {
    description: 'The object of the host cluster an imported Cluster comes from.',
    type: 'object',
    properties: {
      apiVersion: str('Its API version: v1 (a Secret) or cluster.karmada.io/v1alpha1.'),
      kind: str('Secret, or Cluster (Karmada).'),
      namespace: str('Its namespace (none for a Karmada Cluster).'),
      name: str('Its name.'),
      context: str('The kubeconfig context, when the Secret holds several and each is a Cluster.'),
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
      phase: str('Pending, Ready, Unreachable, Unauthorized (the member answers the readiness probe 401: it does not accept the credentials), Forbidden (403: it accepts them but lets them read neither /readyz nor /healthz), Invalid (a configuration synchro cannot use, e.g. a missing Secret) or Duplicate (the member cluster is also registered under another name, registered earlier, and synced under that name only).', { enum: ['Pending', 'Ready', 'Unreachable', 'Unauthorized', 'Forbidden', 'Invalid', 'Duplicate'] }),
      ready: bool('Whether the last readiness probe succeeded.'),
      reason: str('Why the cluster is in its phase: ProbeSucceeded, ProbeFailed, Unauthorized, Forbidden, InvalidConfig, Starting, Duplicate.'),
      message: str('Details of the last transition or probe.'),
      lastTransitionTime: time('When the phase or reason last changed.'),
      lastProbeTime: time('When the readiness probe last ran.'),
      server: str('The member API server URL.'),
      clusterID: str('Which member cluster this is: the uid of its kube-system namespace, or server:URL when that namespace cannot be read. Registrations with one clusterID are one member.'),
      clusterIDSource: str('KubeSystemNamespace or Server.', { enum: ['KubeSystemNamespace', 'Server'] }),
      kubernetesVersion: str("The member's Kubernetes version (gitVersion of its /version), read at connect and at each reconnect."),
      installation: str('The Panoptes installation that syncs the cluster (one per storage database): what it dispatches into the cluster carries the label panoptes.io/installation=<this>, and it never changes what another installation wrote.'),
      conditions: list('ClusterCondition', 'The Ready condition; Duplicate (reason SameClusterAs) when the member is also registered under another name; ObjectsQuarantined; ResourcesForbidden (reason Forbidden) naming the selected resources the credentials may not list.'),
      initialSync: ref(`${p}ClusterInitialSync`, 'Progress of the first list of every selected resource.'),
      resources: list('ClusterResourceStatus', 'Sync state of every synced resource.'),
      apiResources: list('ClusterAPIResource', "The synced resources as the member's discovery describes them."),
      discoveryErrors: { type: 'object', description: 'Groups whose discovery failed, with the error.', additionalProperties: { type: 'string' } },
      configError: str('The problem with the configuration file while its last good version is in effect.'),
      openapi: ref(`${p}ClusterOpenAPIStatus`, 'The OpenAPI documents of the synced group versions, stored for kubectl explain and validation.'),
      warnings: strings('What is weak about the connection, e.g. a plain-HTTP server.'),
      owner: ref(`${p}ClusterOwner`, 'The synchro process writing for this cluster.'),
      observedGeneration: int('The metadata.generation of the spec synchro runs the cluster with.'),
      credentials: ref(`${p}ClusterCredentialsStatus`, 'Where the credentials in use come from (never their values).'),
    },
  },
  [`${p}ClusterCredentialsStatus`]: {
    description: 'Where the credentials synchro uses come from.',
    type: 'object',
    properties: {
      source: str('Secret, Inline, None or File (clusters.yaml).', { enum: ['Secret', 'Inline', 'None', 'File'] }),
      secret: str('namespace/name of the Secret.'),
      kinds: strings('token, clientCertificate and/or kubeconfig.'),
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
  [`${p}ClusterCondition`]: conditionDefinition(
    'A condition of the cluster.',
    'Condition type: Ready (the last readiness probe), Accepted (API objects: whether synchro runs the cluster as this object specifies; False with reason DefinedInClustersFile while clusters.yaml has the name).',
  ),
  [`${p}ClusterInitialSync`]: {
    description: 'Progress of the initial sync.',
    type: 'object',
    properties: {
      resourcesSynced: int('Resources whose initial list is stored.'),
      resourcesTotal: int('Resources selected at the first discovery, less those the credentials may not list.'),
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
      state: str('syncing, synced, error, or forbidden (the credentials may not list it: not synced, checked again every 5 minutes).', { enum: ['syncing', 'synced', 'error', 'forbidden'] }),
      reason: str('Forbidden while the state is forbidden.'),
      objects: int('Objects in sync.'),
      lastEventTime: time('When the last event was received.'),
      lastSyncTime: time('When the last full list was stored.'),
      error: str('The last error (while forbidden: the member\'s message).'),
      errorTime: time('When the last error happened (while forbidden: since when).'),
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
