// Clusters registered through the API, as synchro runs them: the credential rules shared with
// the apiserver's proxy (member/registrations.ts), with the connections of imported Clusters
// from synchro's importer (synchro/import/connection.ts).
import type { ClusterRegistration } from '../../storage/cluster-objects.ts';
import type { SecretSource } from '../../member/host-secrets.ts';
import { MemberNetworks } from '../../member/networks.ts';
import { apiClusters as registered, type ApiClusters as Sorted } from '../../member/registrations.ts';
import { importedConfig } from '../import/connection.ts';
import type { Importer } from '../import/importer.ts';

export { isFileObject, needsSecrets } from '../../member/registrations.ts';

/** What synchro does with the API's Cluster objects this pass. */
export type ApiClusters = Sorted<ClusterRegistration>;

/** member/registrations.ts apiClusters, with imported Clusters configured by `importer`. */
export function apiClusters(registrations: ClusterRegistration[], fileNames: Set<string>, secrets: SecretSource | undefined, networks = new MemberNetworks(), importer?: Importer): ApiClusters {
  return registered(registrations, fileNames, secrets, networks, (reg) => importedConfig(reg, importer, networks));
}
