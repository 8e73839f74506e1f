// Whose a consumer's object is, and what this installation may do to it: the one ownership
// check, pure. The plan (desired.ts), the view of what a consumer holds (diff.ts) and every
// write (writer.ts, against the live object it just read) ask it.
//
// An object is this installation's when it carries Panoptes' managed-by mark and this
// installation's id (label panoptes.io/installation: Store.installationId); one with another
// id is another installation's, never changed nor deleted; one without the mark is the
// consumer's own, never changed nor deleted. A slice is also checked to be of the Service it is
// written for (kubernetes.io/service-name) and, when it is updated, to copy the provider
// slice it is planned from (panoptes.io/source): a name that two keys or two sources shared
// is a conflict, not a takeover.
//
// The Service of a key in a consumer anchors everything else dispatched for it there: slices
// and a ServiceImport are written only while that Service is this installation's, so
// Panoptes never adds endpoints to a Service it did not create.
//
// Objects Panoptes wrote before installations had ids carry the mark and no id ("legacy").
// Exactly one installation adopts each: the one that wants the key's Service and updates it
// with its id, conditional on the resourceVersion it read (a second installation's update
// of the same version fails with 409 and then reads the first one's id: a conflict). The
// legacy slices and ServiceImport of a key follow its Service: adopted (updated) by the
// installation whose Service it now is; deleted by whoever plans them away while the Service
// is nobody's (the consumer's own, or gone: a slice there breaks the rule above, whoever wrote
// it); left alone while the Service is another installation's or still unadopted. A legacy
// Service no installation wants is left in place (docs/multicluster-services.md: how to remove leftovers by label).
import { annotations, installationLabel, labels, managedByLabel, managedByValue } from '../../api/multicluster-service.ts';
import type { KubeObject } from '../../storage/types.ts';

/** Whose an object is, for one installation. */
export type Owner = 'mine' | 'legacy' | 'other' | 'consumer';

/** What the consumer holds at a key's Service name (absent: no Service). */
export type ServiceOwner = Owner | 'absent';

export type Kind = 'Service' | 'EndpointSlice' | 'ServiceImport';
export type Verb = 'create' | 'update' | 'delete';

/** Whether an object carries Panoptes' managed-by mark (any installation's). */
export const isPanoptes = (o: KubeObject | undefined): boolean => o?.metadata?.labels?.[managedByLabel] === managedByValue;

export function ownerOf(o: KubeObject, installation: string): Owner {
  if (!isPanoptes(o)) return 'consumer';
  const id = o.metadata?.labels?.[installationLabel];
  if (id === undefined || id === '') return 'legacy';
  return id === installation ? 'mine' : 'other';
}

/** Whether `o` is this installation's own (written with its id). */
export const isMine = (o: KubeObject | undefined, installation: string): boolean => o !== undefined && ownerOf(o, installation) === 'mine';

/** The labels that say an object is this installation's: the managed-by mark and the id. */
export const ownLabels = (installation: string): Record<string, string> => ({ [managedByLabel]: managedByValue, [installationLabel]: installation });

/** What a write to a consumer's object is checked against. */
export interface WriteCheck {
  kind: Kind;
  verb: Verb;
  /** The key: its namespace and the Service name. */
  namespace: string;
  service: string;
  installation: string;
  /** The object as just read (undefined: none). */
  live?: KubeObject;
  /** What the plan writes (create, update). */
  desired?: KubeObject;
  /** Whose the key's Service is in the consumer, as just read (slices and ServiceImports only). */
  serviceOwner?: ServiceOwner;
}

const ref = (c: WriteCheck) => `${c.kind} ${c.namespace}/${c.live?.metadata?.name ?? c.desired?.metadata?.name ?? c.service}`;

/** Why the write may not be made (a conflict, reported; nothing is written), or undefined when it may. */
export function refusal(c: WriteCheck): string | undefined {
  const what = ref(c);
  const anchored = c.kind !== 'Service';
  const serviceMine = c.serviceOwner === 'mine';
  const noService = `Service ${c.namespace}/${c.service} there is ${c.serviceOwner === 'consumer' ? "the consumer's own" : c.serviceOwner === 'other' ? "another Panoptes installation's" : c.serviceOwner === 'legacy' ? 'not adopted by this installation yet' : 'not there'}: Panoptes adds nothing to a Service it did not create`;
  if (!c.live) {
    if (c.verb === 'delete') return undefined;
    return anchored && !serviceMine ? `${what} is not written: ${noService}` : undefined;
  }
  const owner = ownerOf(c.live, c.installation);
  if (owner === 'consumer') return `${what} exists without Panoptes' mark (${managedByLabel}=${managedByValue}): left alone`;
  if (owner === 'other') return `${what} was written by another Panoptes installation (${installationLabel}=${c.live.metadata?.labels?.[installationLabel]}): left alone`;
  if (c.kind === 'EndpointSlice') {
    const of = c.live.metadata?.labels?.[labels.serviceName];
    if (of !== c.service) return `${what} belongs to Service ${c.namespace}/${of ?? '(none)'}, not ${c.service}: left alone`;
    const src = c.live.metadata?.annotations?.[annotations.source];
    const want = c.desired?.metadata?.annotations?.[annotations.source];
    if (c.verb === 'update' && src !== want) return `${what} holds the endpoints of ${src ?? '(no source)'}, not ${want}: left alone`;
  }
  if (c.verb === 'delete') {
    if (owner === 'mine') return undefined;
    // legacy
    if (c.kind === 'Service') return `${what} was written by a Panoptes installation before installations had ids and this installation does not want it: left alone`;
    return c.serviceOwner === 'mine' || c.serviceOwner === 'consumer' || c.serviceOwner === 'absent' ? undefined : `${what} is left alone: ${noService}`;
  }
  // create over an existing object, or update
  if (anchored && !serviceMine) return `${what} is not written: ${noService}`;
  return undefined;
}
