// The composition root of panoptes.io's kinds: each own kind's strategy, Table and OpenAPI
// definitions, and the read-only resources with handlers of their own, registered with the
// generic machinery that serves them (own-kinds.ts, table.ts, openapi/build.ts, routes.ts),
// as kube-apiserver's kinds fill its generic registry. The generic modules import no kind;
// importing this module (server.ts does) installs every kind, once.
import { clusterKind } from './cluster-object.ts';
import { clusterTable } from './cluster-table.ts';
import { clusterSourceKind } from './cluster-source-object.ts';
import { clusterSourceTable } from './cluster-source-table.ts';
import { collectionDefinitions } from './openapi/collection-schema.ts';
import { collectionObjectsTable } from './collections/table.ts';
import { mcsKind } from './mcs-object.ts';
import { mcsTable } from './mcs-table.ts';
import { clusterDefinitions } from './openapi/cluster-schema.ts';
import { clusterSourceDefinitions } from './openapi/cluster-source-schema.ts';
import { mcsDefinitions } from './openapi/mcs-schema.ts';
import { synchroMemberDefinitions } from './openapi/synchro-member-schema.ts';
import { registerDefinitions } from './openapi/build.ts';
import { registerOwnKind } from './own-kinds.ts';
import { collectionResourcesInfo, synchroMembersInfo } from './panoptes-group.ts';
import { registerGroupRoute } from './routes.ts';
import { serveSynchroMembers, synchroMembersPath } from './synchro-members.ts';
import { synchroMemberTable } from './synchro-members-table.ts';
import { registerTable } from './table.ts';

// The writable kinds: strategy, Table, OpenAPI definitions.
for (const [kind, table, definitions] of [
  [clusterKind, clusterTable, clusterDefinitions],
  [mcsKind, mcsTable, mcsDefinitions],
  [clusterSourceKind, clusterSourceTable, clusterSourceDefinitions],
] as const) {
  registerOwnKind(kind);
  registerTable(kind.info.resource, table);
  registerDefinitions(definitions);
}
// Collections (apiserver/collections/): a Table of their objects, their OpenAPI definitions.
registerTable(collectionResourcesInfo.resource, collectionObjectsTable);
registerDefinitions(collectionDefinitions);
// Synchro members: read-only, served by their own handler from storage's member rows.
registerTable(synchroMembersInfo.resource, synchroMemberTable);
registerDefinitions(synchroMemberDefinitions);
registerGroupRoute({ path: synchroMembersPath, serve: serveSynchroMembers });
