// The composition root of panoptes.io's kinds: each own kind's strategy, Table and OpenAPI
// definitions, and the read-only resources with handlers of their own, registered with the
// generic machinery that serves them (registry/generic/kinds.ts, read/table.ts,
// openapi/build.ts, endpoints/routes.ts),
// as kube-apiserver's kinds fill its generic registry. The generic modules import no kind;
// importing this module (server.ts does) installs every kind, once.
import { clusterKind } from './registry/cluster/strategy.ts';
import { clusterTable } from './registry/cluster/table.ts';
import { clusterSourceKind } from './registry/clustersource/strategy.ts';
import { clusterSourceTable } from './registry/clustersource/table.ts';
import { collectionDefinitions } from './openapi/collection-schema.ts';
import { collectionObjectsTable } from './collections/table.ts';
import { mcsKind } from './registry/multiclusterservice/strategy.ts';
import { mcsTable } from './registry/multiclusterservice/table.ts';
import { clusterDefinitions } from './registry/cluster/schema.ts';
import { clusterSourceDefinitions } from './registry/clustersource/schema.ts';
import { mcsDefinitions } from './registry/multiclusterservice/schema.ts';
import { synchroMemberDefinitions } from './registry/synchromembers/schema.ts';
import { registerDefinitions } from './openapi/build.ts';
import { registerOwnKind } from './registry/generic/kinds.ts';
import { registerPanoptesResource } from './discovery/panoptes-group.ts';
import { collectionResourcesInfo } from './collections/resource-info.ts';
import { synchroMembersInfo } from './registry/synchromembers/info.ts';
import { registerGroupRoute } from './endpoints/routes.ts';
import { serveSynchroMembers, synchroMembersPath } from './registry/synchromembers/serve.ts';
import { synchroMemberTable } from './registry/synchromembers/table.ts';
import { registerTable } from './read/table.ts';

// The writable kinds: discovery, strategy, Table, OpenAPI definitions.
for (const [kind, table, definitions] of [
  [clusterKind, clusterTable, clusterDefinitions],
  [mcsKind, mcsTable, mcsDefinitions],
  [clusterSourceKind, clusterSourceTable, clusterSourceDefinitions],
] as const) {
  registerPanoptesResource({ info: kind.info, writable: true, fleet: true });
  registerOwnKind(kind);
  registerTable(kind.info.resource, table);
  registerDefinitions(definitions);
}
// Collections (apiserver/collections/): a Table of their objects, their OpenAPI definitions.
registerPanoptesResource({ info: collectionResourcesInfo, writable: false, fleet: false });
registerTable(collectionResourcesInfo.resource, collectionObjectsTable);
registerDefinitions(collectionDefinitions);
// Synchro members: read-only, served by their own handler from storage's member rows.
registerPanoptesResource({ info: synchroMembersInfo, writable: false, fleet: true });
registerTable(synchroMembersInfo.resource, synchroMemberTable);
registerDefinitions(synchroMemberDefinitions);
registerGroupRoute({ path: synchroMembersPath, serve: serveSynchroMembers });
