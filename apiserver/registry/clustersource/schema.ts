// The OpenAPI schemas (Swagger 2.0 form) of the ClusterSource kind and its list
// (panoptes.io/v1alpha1, cluster-scoped): the spec of api/cluster-source.ts (what its
// validation accepts: kubectl explain shows it) and the status synchro's importer writes.
import { clusterSourceFinalizer, invalidNameRules, kubeconfigContexts, profileProviderTypes, removalPolicies, selectorOperators, sourceTypes } from '../../../api/cluster-source.ts';
import type { JsonObject } from '../../../kube/openapi-convert.ts';
import { bool, conditionDefinition, gvk, int, list, listDefinition, objectMetaName, p, ref, str, strings, typeMeta } from '../../openapi/own-schema.ts';

export const clusterSourceDefinitions: Record<string, JsonObject> = {
  [`${p}ClusterSource`]: {
    description:
      'ClusterSource names where on the host cluster member clusters are already described — Cluster API kubeconfig Secrets, Argo CD cluster Secrets, Karmada Clusters, SIG Multicluster ClusterProfiles, or Secrets holding a kubeconfig — so that each becomes a Cluster (spec.source: clustersource/<name>) without registering it by hand.',
    type: 'object',
    properties: {
      ...typeMeta,
      metadata: ref(objectMetaName, `Standard object's metadata. The finalizer ${clusterSourceFinalizer} holds a deleted ClusterSource until its Clusters are removed.`),
      spec: ref(`${p}ClusterSourceSpec`, 'What to import, from where, and how to name and configure the imported Clusters.'),
      status: ref(`${p}ClusterSourceStatus`, 'What the importer did. Written by synchro alone.'),
    },
    'x-kubernetes-group-version-kind': gvk('ClusterSource'),
  },
  [`${p}ClusterSourceList`]: listDefinition('ClusterSource', 'The cluster sources.'),
  [`${p}ClusterSourceSpec`]: {
    description: 'ClusterSourceSpec says which source objects of the host cluster become Clusters.',
    type: 'object',
    required: ['type', 'namespaces'],
    properties: {
      type: str(
        'clusterAPI: Secrets of type cluster.x-k8s.io/secret labelled cluster.x-k8s.io/cluster-name (key value: a kubeconfig); argoCD: Secrets labelled argocd.argoproj.io/secret-type=cluster (name, server, config); karmada: cluster.karmada.io/v1alpha1 Clusters in Push mode (apiEndpoint, and caBundle and token of their secretRef); kubeconfigSecrets: Secrets with a kubeconfig key; clusterProfiles: multicluster.x-k8s.io/v1alpha1 ClusterProfiles (the server and CA of an access provider, credentials from spec.clusterProfiles.providers).',
        { enum: [...sourceTypes] },
      ),
      namespaces: strings('The namespaces of the host cluster read (for karmada: where the Secrets its Clusters name are). Panoptes reads nowhere else.'),
      selector: ref(`${p}ClusterSourceSelector`, 'Only source objects with these labels.'),
      naming: ref(`${p}ClusterSourceNaming`, 'How the imported Clusters are named.'),
      defaults: ref(`${p}ClusterSourceDefaults`, 'What every imported Cluster syncs.'),
      onSourceRemoval: str('Delete (the default): a Cluster whose source object goes is removed (its objects DELETED to watchers); Keep: it stays, Invalid, with its data.', { enum: [...removalPolicies] }),
      clusterAPI: ref(`${p}ClusterSourceClusterAPI`, 'Cluster API options.'),
      kubeconfigSecrets: ref(`${p}ClusterSourceKubeconfigSecrets`, 'kubeconfigSecrets options.'),
      clusterProfiles: ref(`${p}ClusterSourceClusterProfiles`, 'clusterProfiles options (required for that type).'),
    },
  },
  [`${p}ClusterSourceSelector`]: {
    description: 'A label selector, as metav1.LabelSelector.',
    type: 'object',
    properties: {
      matchLabels: { type: 'object', description: 'Labels every source object must have.', additionalProperties: { type: 'string' } },
      matchExpressions: list('ClusterSourceSelectorRequirement', 'Requirements every source object must meet.'),
    },
  },
  [`${p}ClusterSourceSelectorRequirement`]: {
    description: 'A label selector requirement.',
    type: 'object',
    required: ['key', 'operator'],
    properties: { key: str('The label key.'), operator: str('In, NotIn, Exists or DoesNotExist.', { enum: [...selectorOperators] }), values: strings('The values (In, NotIn).') },
  },
  [`${p}ClusterSourceNaming`]: {
    description: 'How imported Clusters are named: prefix + template, a DNS label.',
    type: 'object',
    properties: {
      template: str('The name with {name} (the source\'s cluster name), {namespace} and {context} (kubeconfigSecrets with contexts: All). Default {name}.'),
      prefix: str('Put before every name, e.g. capi-.'),
      invalidNames: str('A name that is not a DNS label: Sanitize (the default: lowercase, other characters -, cut to 63 with a hash) or Reject (not imported; a failure in the status).', { enum: [...invalidNameRules] }),
    },
  },
  [`${p}ClusterSourceDefaults`]: {
    description: 'spec.resources, spec.namespaces and spec.multiClusterServices of every imported Cluster.',
    type: 'object',
    properties: {
      resources: strings('Resource patterns, as a Cluster\'s spec.resources. Default: the default set.'),
      namespaces: ref(`${p}ClusterNamespaceFilter`, 'As a Cluster\'s spec.namespaces.'),
      multiClusterServices: ref(`${p}ClusterMultiClusterServices`, 'The multi-cluster Service roles of every imported Cluster (neither unless true). Granting one needs update on clustersources/multiclusterservices of this ClusterSource.'),
    },
  },
  [`${p}ClusterSourceClusterAPI`]: {
    description: 'Cluster API options.',
    type: 'object',
    properties: { provisionedOnly: bool('Only clusters whose cluster.x-k8s.io Cluster is provisioned (status.phase Provisioned, or infrastructureReady and controlPlaneReady).') },
  },
  [`${p}ClusterSourceClusterProfiles`]: {
    description: 'clusterProfiles options: the access providers used (KEP-5339).',
    type: 'object',
    required: ['providers'],
    properties: { providers: list('ClusterSourceProfileProvider', 'The access providers, in order: the first a profile offers (status.accessProviders) is used.') },
  },
  [`${p}ClusterSourceProfileProvider`]: {
    description: 'An access provider of ClusterProfiles, and where its credentials come from.',
    type: 'object',
    required: ['name', 'type'],
    properties: {
      name: str('The name of the access provider in the profiles\' status.accessProviders.'),
      type: str('Secret: key token of the Secret named by clusterName of the extension client.authentication.k8s.io/exec (default: the profile\'s name), in the profile\'s namespace, whose key server must be the server of the access provider; Exec: the exec plugin of that name configured on synchro (--clusterprofile-provider-file).', { enum: [...profileProviderTypes] }),
    },
  },
  [`${p}ClusterSourceKubeconfigSecrets`]: {
    description: 'kubeconfigSecrets options.',
    type: 'object',
    properties: {
      key: str('The Secret key holding the kubeconfig (default kubeconfig).'),
      contexts: str('Current (the default): the current context; All: one Cluster per context.', { enum: [...kubeconfigContexts] }),
    },
  },
  [`${p}ClusterSourceStatus`]: {
    description: 'ClusterSourceStatus is what the importer observed and did.',
    type: 'object',
    properties: {
      observedGeneration: int('The metadata.generation of the spec the status is for.'),
      imported: int('Clusters imported.'),
      failed: int('Source objects that could not be imported, or whose Cluster is Invalid.'),
      failures: list('ClusterSourceFailure', 'Each source object that could not be imported, with the reason.'),
      conditions: list('ClusterSourceCondition', 'Ready: the source objects are read and imported.'),
    },
  },
  [`${p}ClusterSourceFailure`]: {
    description: 'A source object that could not be imported.',
    type: 'object',
    properties: {
      object: str('The source object, e.g. Secret fleet/east-kubeconfig.'),
      cluster: str('The Cluster name it has or would have.'),
      reason: str('Invalid (unusable: the Cluster is Invalid), NameClash (another Cluster has the name) or InvalidName.'),
      message: str('Why.'),
    },
  },
  [`${p}ClusterSourceCondition`]: conditionDefinition('A condition of the ClusterSource.', 'Ready.'),
};
