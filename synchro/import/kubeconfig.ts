// The member clusters a kubeconfig held in a Secret describes: its current context, or every
// context. Only what a Secret can carry by itself: a token or client certificate data, the CA
// as data. Exec plugins, auth providers, basic auth, impersonation and file references are
// refused with the reason (they would run code or read files of the Panoptes host).
import { kubeconfigContext, parseKubeconfig, type Kubeconfig } from '../../member/kubeconfig.ts';
import type { ImportedConnection } from './candidate.ts';

export type ContextConnection = { context: string; connection: ImportedConnection } | { context: string; invalid: string };

function connectionOf(kc: Kubeconfig, name: string | undefined): ImportedConnection {
  const { cluster, user } = kubeconfigContext(kc, name);
  if (cluster.caFile) throw new Error('certificate-authority (a file) is not supported: give certificate-authority-data');
  if (user?.plugin) throw new Error('the user has an exec plugin or an auth provider, which Panoptes does not run for imported clusters: give a token or client-certificate-data and client-key-data');
  if (user?.tokenFile || user?.certFile || user?.keyFile) throw new Error('the user names files (tokenFile, client-certificate or client-key), which are not read for imported clusters: give the data');
  if (user?.username || user?.password) throw new Error('basic auth (username/password) is not supported: give a token or a client certificate');
  if (user?.impersonateUser) throw new Error('impersonation (as) is not supported for imported clusters');
  if (user?.certData && !user.keyData) throw new Error('client-certificate-data without client-key-data');
  return {
    server: cluster.server,
    ...(cluster.caData ? { caData: cluster.caData } : {}),
    ...(cluster.skipTLSVerify ? { insecureSkipTLSVerify: true } : {}),
    ...(cluster.tlsServerName ? { tlsServerName: cluster.tlsServerName } : {}),
    ...(user?.token ? { token: user.token.trim() } : {}),
    ...(user?.certData && user.keyData ? { clientCertData: user.certData, clientKeyData: user.keyData } : {}),
  };
}

/** The connections of a kubeconfig's text: its current context, or all of them; a broken one says why. Throws when the text is not a kubeconfig. */
export function kubeconfigConnections(text: string, where: string, all: boolean): ContextConnection[] {
  let kc: Kubeconfig;
  try {
    kc = parseKubeconfig(text, where);
  } catch (err) {
    throw new Error(`${where}: ${(err as Error).message.replace(`kubeconfig ${where} `, '')}`);
  }
  const names = all ? kc.contexts.map((c) => c.name) : [kc.currentContext];
  if (!all && !kc.currentContext) throw new Error(`${where}: the kubeconfig has no current-context`);
  if (all && names.length === 0) throw new Error(`${where}: the kubeconfig has no contexts`);
  return names.map((name) => {
    try {
      return { context: name ?? '', connection: connectionOf(kc, name) };
    } catch (err) {
      return { context: name ?? '', invalid: `${where}${all ? ` context ${name}` : ''}: ${(err as Error).message}` };
    }
  });
}
