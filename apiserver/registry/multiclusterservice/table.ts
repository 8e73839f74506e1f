// The columns and cells of `kubectl get multiclusterservices` (`kubectl get mcs`): name, the
// providers and consumers (a count, or `all` when the spec names none), the endpoints
// collected from the providers and dispatched (a provider that is not Ready counts while its
// policy keeps its endpoints), READY as consumers in place of consumers, and age; -o wide adds
// the ports exported, the not-Ready policy and a message (Terminating while a deleted object's
// consumers are cleaned up; else the providers that are not Ready, then the Ready condition's
// message or the first consumer error). kubectl adds the NAMESPACE column itself for -A (from
// the rows' object metadata).
import { providerNotReadyOf, type McsCondition, type McsConsumerStatus, type McsProviderStatus, type MultiClusterServiceSpec, type MultiClusterServiceStatus } from '../../../api/multicluster-service.ts';
import { since } from '../../../kube/printers.ts';
import type { KubeObject } from '../../../storage/types.ts';
import type { TableRenderer } from '../../read/table.ts';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = <T>(v: unknown): T[] => (Array.isArray(v) ? (v.filter(isRecord) as T[]) : []);

/** A count of the clusters a list names, or `all` when it names none (every cluster). */
function clusters(names: unknown): string {
  return Array.isArray(names) && names.length ? String(names.length) : 'all';
}

const condition = (conditions: unknown, type: string): McsCondition | undefined => list<McsCondition>(conditions).find((c) => c.type === type);

/**
 * A consumer is ready when the Service and the slices are in place: its conditions
 * ServiceApplied and EndpointSlicesDispatched True (without them: serviceApplied, and no error).
 */
export function consumerReady(c: McsConsumerStatus): boolean {
  const applied = condition(c.conditions, 'ServiceApplied');
  const dispatched = condition(c.conditions, 'EndpointSlicesDispatched');
  const inPlace = c.serviceApplied === true && !c.lastError;
  return (applied ? applied.status === 'True' : inPlace) && (dispatched ? dispatched.status === 'True' : inPlace);
}

function ports(spec: MultiClusterServiceSpec): string {
  if (!Array.isArray(spec.ports)) return 'all';
  return list<{ name?: unknown; port?: unknown }>(spec.ports).map((x) => [x.name, x.port].filter((v) => v !== undefined).join(':')).join(',') || 'all';
}

function policy(spec: MultiClusterServiceSpec): string {
  const p = providerNotReadyOf(spec);
  return p.policy === 'KeepForGracePeriod' ? `${p.policy}(${p.gracePeriodSeconds}s)` : p.policy;
}

function message(o: KubeObject, status: MultiClusterServiceStatus, consumers: McsConsumerStatus[], providers: McsProviderStatus[]): string {
  if (o.metadata?.deletionTimestamp) {
    const left = consumers.filter((c) => c.cleanedUp !== true).length;
    return `Terminating: cleaning up ${left} consumer cluster${left === 1 ? '' : 's'}`;
  }
  const parts = providers
    .filter((p) => p.ready === false)
    .map((p) => `provider ${p.cluster} not Ready${typeof p.notReadySince === 'string' ? ` since ${p.notReadySince}` : ''}: its endpoints are ${p.dispatched === false ? 'removed' : 'kept'}`);
  const ready = condition(status.conditions, 'Ready');
  const failed = consumers.find((c) => typeof c.lastError === 'string' && c.lastError !== '');
  if (ready?.message) parts.push(ready.message);
  else if (failed) parts.push(`${failed.cluster}: ${failed.lastError}`);
  return parts.join('; ');
}

export const mcsTable: TableRenderer = {
  columns: [
    { name: 'Name', type: 'string', format: 'name', description: 'The name of the Service exported', priority: 0 },
    { name: 'Providers', type: 'string', format: '', description: 'Clusters the Service and its EndpointSlices are collected from: how many the spec names, or all', priority: 0 },
    { name: 'Consumers', type: 'string', format: '', description: 'Clusters the Service and its EndpointSlices are dispatched to: how many the spec names, or all', priority: 0 },
    { name: 'Endpoints', type: 'integer', format: '', description: 'Ready endpoints collected from the providers and dispatched (a provider that is not Ready counts while its policy keeps its endpoints)', priority: 0 },
    { name: 'Ready', type: 'string', format: '', description: 'Consumers with the Service and its EndpointSlices in place, of the consumers', priority: 0 },
    { name: 'Age', type: 'string', format: '', description: 'Time since the MultiClusterService was created', priority: 0 },
    { name: 'Ports', type: 'string', format: '', description: 'The ports exported (name:port), or all', priority: 1 },
    { name: 'Policy', type: 'string', format: '', description: 'What happens to the endpoints of a provider that is not Ready', priority: 1 },
    { name: 'Message', type: 'string', format: '', description: 'Terminating; else the providers that are not Ready, then the Ready condition or the first consumer error', priority: 1 },
  ],
  cells(o: KubeObject, _cluster: string, now: number) {
    const spec = (isRecord(o.spec) ? o.spec : {}) as MultiClusterServiceSpec;
    const status = (isRecord(o.status) ? o.status : {}) as MultiClusterServiceStatus;
    const consumers = list<McsConsumerStatus>(status.consumers);
    const providers = list<McsProviderStatus>(status.providers);
    const endpoints = providers.reduce((n, p) => n + (typeof p.endpoints === 'number' && p.dispatched !== false ? p.endpoints : 0), 0);
    return [
      o.metadata?.name ?? '',
      clusters(spec.providerClusters),
      clusters(spec.consumerClusters),
      endpoints,
      `${consumers.filter(consumerReady).length}/${consumers.length}`,
      since(o.metadata?.creationTimestamp, now),
      ports(spec),
      policy(spec),
      message(o, status, consumers, providers),
    ];
  },
};
