// --allow-member-networks, shared by `panoptes apiserver` (it validates Cluster writes),
// `panoptes synchro` (it connects) and `panoptes all-in-one`: the networks API-registered
// clusters may reach although loopback, link-local and unspecified addresses are refused by
// default (member/networks.ts).
import { MemberNetworks, memberNetworksEnv, NetworksError } from '../../member/networks.ts';
import { UsageError } from '../command.ts';

export const memberNetworksFlagSpec = { 'allow-member-networks': { type: 'string' } } as const;

export const memberNetworksFlagHelp = `  --allow-member-networks CIDR[,CIDR...]
                                networks that Clusters registered through the API may reach although
                                loopback (127.0.0.0/8, ::1), link-local (169.254.0.0/16, fe80::/10) and
                                unspecified addresses are refused by default, e.g. 127.0.0.0/8 for test
                                clusters on this machine (env ${memberNetworksEnv}). clusters.yaml and
                                kubeconfig clusters are not restricted`;

/** The flag, else the environment variable; a bad CIDR is a UsageError. */
export function memberNetworksFlag(values: { 'allow-member-networks'?: string }, env: NodeJS.ProcessEnv = process.env): MemberNetworks {
  try {
    return MemberNetworks.parse(values['allow-member-networks'] ?? env[memberNetworksEnv]);
  } catch (err) {
    if (err instanceof NetworksError) throw new UsageError(err.message);
    throw err;
  }
}
