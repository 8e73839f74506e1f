// The OpenAPI schemas (Swagger 2.0 form) of the MultiClusterService kind and its list
// (panoptes.io/v1alpha1, namespaced), as apiserver/discovery/panoptes-group.ts serves it: the spec of
// api/multicluster-service.ts (what its validation accepts: kubectl explain shows it, kubectl's
// client-side validation checks types against it) and the status synchro's dispatcher writes.
import { defaultGracePeriodSeconds, mcsFinalizer, providerNotReadyPolicies } from '../../../api/multicluster-service.ts';
import type { JsonObject } from '../../../kube/openapi-convert.ts';
import { bool, conditionDefinition, gvk, int, list, listDefinition, objectMetaName, p, ref, str, strings, time, typeMeta } from '../../openapi/own-schema.ts';

const clusterNames = (what: string) => ({ ...strings(`${what} Member cluster names (DNS labels), each once; absent or empty: every cluster.`), 'x-kubernetes-list-type': 'set' });

export const mcsDefinitions: Record<string, JsonObject> = {
  [`${p}MultiClusterService`]: {
    description:
      'MultiClusterService exports a Service of some member clusters (the providers) to others (the consumers): in each consumer, Panoptes keeps the Service (created when absent, without a selector) and one EndpointSlice per provider slice, so <service>.<namespace>.svc.cluster.local reaches the providers\' endpoints.',
    type: 'object',
    properties: {
      ...typeMeta,
      metadata: ref(
        objectMetaName,
        `Standard object's metadata. The name is the exported Service's (a DNS-1035 label), the namespace its namespace in every cluster. The finalizer ${mcsFinalizer} holds a deleted object until every consumer is cleaned up.`,
      ),
      spec: ref(`${p}MultiClusterServiceSpec`, 'Which clusters provide and consume the Service, which ports, and what happens to the endpoints of a provider that is not Ready.'),
      status: ref(`${p}MultiClusterServiceStatus`, 'What the dispatcher did, per provider and per consumer. Written by synchro alone.'),
    },
    'x-kubernetes-group-version-kind': gvk('MultiClusterService'),
  },
  [`${p}MultiClusterServiceList`]: listDefinition('MultiClusterService', 'The exported Services.'),
  [`${p}MultiClusterServiceSpec`]: {
    description: 'MultiClusterServiceSpec says where a Service is collected from and dispatched to.',
    type: 'object',
    properties: {
      providerClusters: clusterNames(
        'Clusters whose Service of this namespace and name, and its EndpointSlices, are collected; only clusters the operator granted the provider role (their Cluster\'s spec.multiClusterServices.provider) provide.',
      ),
      consumerClusters: clusterNames(
        'Clusters the Service and the slices are dispatched to; only clusters granted the consumer role get anything. A consumer with a Service of that name of its own (a provider too) gets nothing added to it.',
      ),
      ports: list('MultiClusterServicePort', 'Only these ports of the providers\' Service are exported; absent: every port.'),
      providerNotReady: ref(`${p}MultiClusterServiceProviderNotReady`, 'What happens to the dispatched endpoints of a provider while it is not Ready.'),
    },
  },
  [`${p}MultiClusterServicePort`]: {
    description: 'A port of the Service, by name and/or number (with both, both must match).',
    type: 'object',
    properties: {
      name: str('The Service port\'s name (a DNS-1123 label).'),
      port: { ...int('The Service port\'s number, 1-65535.', { minimum: 1, maximum: 65535 }), format: 'int32' },
    },
  },
  [`${p}MultiClusterServiceProviderNotReady`]: {
    description: 'The policy for providers that are not Ready: Unreachable is not the same as endpoints gone.',
    type: 'object',
    properties: {
      policy: str(
        `KeepForGracePeriod (the default): keep the last endpoints for gracePeriodSeconds as endpoints going away (conditions ready false, serving as they were, terminating true: used only while no ready endpoint is left), then remove them; RemoveImmediately: remove them at once; Keep: keep them as the provider last had them (ready included) until it is Ready again.`,
        { enum: [...providerNotReadyPolicies] },
      ),
      gracePeriodSeconds: int(`Seconds KeepForGracePeriod keeps the endpoints (default ${defaultGracePeriodSeconds}; only with that policy).`, { minimum: 0 }),
    },
  },
  [`${p}MultiClusterServiceStatus`]: {
    description: 'MultiClusterServiceStatus is what the dispatcher observed and did.',
    type: 'object',
    properties: {
      observedGeneration: int('The metadata.generation of the spec the status is for.'),
      providers: list('MultiClusterServiceProviderStatus', 'Every provider cluster.'),
      consumers: list('MultiClusterServiceConsumerStatus', 'Every consumer cluster: the synchro process holding its lease writes its entry.'),
      conditions: list('MultiClusterServiceCondition', 'Ready: every consumer has the Service and its slices.'),
    },
  },
  [`${p}MultiClusterServiceProviderStatus`]: {
    description: 'One provider cluster.',
    type: 'object',
    properties: {
      cluster: str('The provider cluster.'),
      endpoints: int('Ready endpoints of its slices.'),
      ready: bool('Whether the cluster is Ready (its data is current).'),
      notReadySince: time('Since when it is not Ready (the grace period counts from it).'),
      dispatched: bool('Whether its endpoints are dispatched now: it is Ready, or the providerNotReady policy still keeps them.'),
    },
  },
  [`${p}MultiClusterServiceConsumerStatus`]: {
    description: 'One consumer cluster.',
    type: 'object',
    properties: {
      cluster: str('The consumer cluster.'),
      serviceApplied: bool('The Service is in place in the consumer.'),
      endpointSlices: int('Dispatched EndpointSlices in place.'),
      endpoints: int('Endpoints they hold.'),
      lastDispatchTime: time('When the consumer was last brought to the desired state.'),
      lastError: str('The last error of a write to this consumer (a Status reason and message).'),
      conditions: list('MultiClusterServiceCondition', 'ServiceApplied and EndpointSlicesDispatched.'),
      cleanedUp: bool('After deletion: everything dispatched to this consumer is gone.'),
      failingSince: time('Since when writes for this Service keep failing in this consumer; a deletion waits for its cleanup there this long at most (--mcs-away-consumer-grace).'),
      refusedEndpoints: int('Provider endpoints not dispatched to this consumer: addresses kube refuses (loopback, link-local, unspecified), or inside its own pod or service ranges.'),
    },
  },
  [`${p}MultiClusterServiceCondition`]: conditionDefinition('A condition, as metav1.Condition.', 'Ready (the object), ServiceApplied or EndpointSlicesDispatched (a consumer).', {
    observedGeneration: int('The metadata.generation the condition is for.'),
  }),
};
