// The OpenAPI schemas (Swagger 2.0 form) of the SynchroMember kind and its list
// (panoptes.io/v1alpha1, cluster-scoped, read-only; apiserver/registry/synchromembers/serve.ts): one synchro
// process as storage has it, its state and the configuration error it reports.
import type { JsonObject } from '../../../kube/openapi-convert.ts';
import { gvk, int, listDefinition, objectMetaName, p, ref, str, strings, typeMeta } from '../../openapi/own-schema.ts';

const microTime = (description: string) => str(description, { format: 'date-time' });

export const synchroMemberDefinitions: Record<string, JsonObject> = {
  [`${p}SynchroMember`]: {
    description:
      'SynchroMember is one synchro process of the fleet sharing the member clusters, as its heartbeat row in storage says it (read-only: written by the process itself). A member whose clusters file does not load is kept out of the membership and reports itself Out with its configError.',
    type: 'object',
    properties: {
      ...typeMeta,
      metadata: ref(objectMetaName, "name: the process's identity (--identity: letters, digits and - _ . : @, not always a DNS name); creationTimestamp: when the process instance holding it started."),
      status: ref(`${p}SynchroMemberStatus`, 'What the member last reported, and its state against the database clock.'),
    },
    'x-kubernetes-group-version-kind': gvk('SynchroMember'),
  },
  [`${p}SynchroMemberList`]: listDefinition('SynchroMember', 'The synchro processes storage has (rows expired for over an hour are forgotten).'),
  [`${p}SynchroMemberStatus`]: {
    description: 'The state of a synchro member.',
    type: 'object',
    required: ['state'],
    properties: {
      state: str('Live: counted in the membership (its heartbeat has not expired). Out: running, reporting that it cannot work (its row written already expired, within the last minute), e.g. its clusters file does not load. Expired: no heartbeat since its TTL.', { enum: ['Live', 'Out', 'Expired'] }),
      host: str('The host name it runs on.'),
      pid: int('Its process id (on that host, in its pid namespace).'),
      instance: str('The process instance writing the heartbeat: random per process start (absent for rows of an older release).'),
      heartbeatTime: microTime('When it last wrote its heartbeat (database clock).'),
      expiresTime: microTime('When its heartbeat expires (database clock); equal to heartbeatTime for a member reporting itself out.'),
      configError: str('Its configuration problem as it last reported it: its clusters file does not load (absent: none).'),
      clusters: strings('The member clusters whose lease it holds (it writes their objects).'),
    },
  },
};
