// Which member cluster a registration reaches, and the registrations that reach the same one.
//
// A member's id is the uid of its `kube-system` namespace: Kubernetes has no cluster id of its
// own, and the de-facto one is that uid. KEP-2149 (kubernetes/enhancements,
// keps/sig-multicluster/2149-clusterid: the cluster id claim, now the About API's
// ClusterProperty `cluster.clusterset.k8s.io`) recommends it ("A recommended option that meets
// these broad restrictions is a cluster's kube-system.uuid": immutable for the cluster's
// lifetime, unique beyond it), and OpenTelemetry's `k8s.cluster.uid` is the same uid. It is read
// with the registration's own connection (one GET, at connect and at each reconnect). A
// connection that may not read it (403: the reader ClusterRole of manifests/member-cluster/
// grants get on namespaces; a narrower role may not) identifies the member by its normalised
// server URL and TLS server name instead, and its status says so: two registrations through
// different URLs of one member are then not recognised as one.
//
// Two registrations with one id reach one member: synced under both names, every object would
// be stored, listed and summed twice. The registration registered first (its clusters row the
// oldest; names break a tie) syncs it; every other is a duplicate of it and syncs nothing
// (sameMember). Registered first, not first by name: the id is not a secret (it is served), so a
// newcomer can claim any id, and must never take over the member from the registration already
// syncing it (nor empty the fleet's view of it). Every synchro member decides the same from the
// ids and registration times recorded in the clusters table, whichever holds which.
import { normalizeServer } from '../../api/cluster.ts';
import { describeError, HttpError, type ClusterClient } from '../../member/client.ts';

/** How a member was identified: its kube-system namespace's uid, or (that refused) its server. */
export type ClusterIDSource = 'KubeSystemNamespace' | 'Server';

export interface ClusterIdentity {
  clusterID: string;
  source: ClusterIDSource;
  /** Why the server stands in for the uid (the namespace could not be read), for status warnings and the log. */
  warning?: string;
}

/** The reason and condition type a registration of an already registered member gets. */
export const duplicateCondition = 'Duplicate' as const;
export const duplicateReason = 'Duplicate';
export const sameClusterReason = 'SameClusterAs';

const kubeSystemPath = '/api/v1/namespaces/kube-system';

/**
 * What is taken for a uid: kube-apiserver writes a UUID (36 characters); a member that answers
 * anything longer or stranger is not trusted with what status.clusterID serves and messages quote.
 */
const uidPattern = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** The id of a member that does not let its namespace be read: its server as compared (and the TLS server name it is verified as). */
export function serverIdentity(server: string, tlsServerName?: string): string {
  return `server:${normalizeServer(server)}${tlsServerName ? `#${tlsServerName}` : ''}`;
}

/**
 * The member's id: the uid of its kube-system namespace. An answer that says the namespace may
 * not be read (403) or is not there (404) falls back to the server, with a warning. Any other
 * failure throws and the caller tries again, as after any failed request to the member: no
 * answer, 401 (the member did not take the credentials: nothing of it is synced anyway), 429 and
 * 5xx (an overloaded or broken member, which a later try may identify by its uid).
 */
export async function identifyCluster(client: ClusterClient, signal?: AbortSignal): Promise<ClusterIdentity> {
  try {
    const ns = await client.get<{ metadata?: { uid?: unknown } }>(kubeSystemPath, { timeoutMs: 10_000, signal });
    const uid = ns?.metadata?.uid;
    if (typeof uid === 'string' && uidPattern.test(uid)) return { clusterID: uid, source: 'KubeSystemNamespace' };
    return fallback(client, typeof uid === 'string' && uid !== '' ? 'its metadata.uid is not a Kubernetes uid' : 'the answer has no metadata.uid');
  } catch (err) {
    if (!(err instanceof HttpError) || (err.status !== 403 && err.status !== 404)) throw err;
    return fallback(client, describeError(err));
  }
}

/**
 * The member's Kubernetes version (GET /version: gitVersion), read with the identity; undefined
 * when it does not say (a refusal or an odd answer is no reason to stop: the version is shown,
 * e.g. in a published ClusterProfile, not relied on). A connection error throws, as above.
 */
export async function kubernetesVersion(client: ClusterClient, signal?: AbortSignal): Promise<string | undefined> {
  try {
    const v = await client.get<{ gitVersion?: unknown }>('/version', { timeoutMs: 10_000, signal });
    return typeof v?.gitVersion === 'string' && /^v?\d+\.\d+[-+.\w]*$/.test(v.gitVersion) ? v.gitVersion : undefined;
  } catch (err) {
    if (err instanceof HttpError) return undefined;
    throw err;
  }
}

function fallback(client: ClusterClient, why: string): ClusterIdentity {
  return {
    clusterID: serverIdentity(client.server, client.tlsServerName),
    source: 'Server',
    warning: `GET ${kubeSystemPath}: ${why}: the cluster is identified by its server URL, so a registration of the same member cluster through another URL is not recognised as one; grant get on namespaces (the reader ClusterRole of manifests/member-cluster/ does)`,
  };
}

/** A registration and the others that reach the same member. */
export interface SameMember {
  /** The other registrations of the member, by name, sorted. */
  others: string[];
  /** The registration that syncs the member: the one registered first (then the first name). */
  syncedBy: string;
}

/** What the clusters table records of a registration: its member's id and when it was registered. */
export interface RecordedIdentity {
  clusterID: string;
  registeredAt: string;
}

/**
 * The registrations of each recorded id, names sorted: built once per identities map (every
 * cluster of a member compares itself with the same map each pass; scanning it per cluster
 * was quadratic in the fleet).
 */
const byId = new WeakMap<ReadonlyMap<string, RecordedIdentity>, Map<string, string[]>>();
function namesById(identities: ReadonlyMap<string, RecordedIdentity>): Map<string, string[]> {
  let index = byId.get(identities);
  if (!index) {
    index = new Map();
    for (const [n, r] of identities) {
      const names = index.get(r.clusterID);
      if (names) names.push(n);
      else index.set(r.clusterID, [n]);
    }
    for (const names of index.values()) names.sort();
    byId.set(identities, index);
  }
  return index;
}

/**
 * The registrations (other than `name`) whose recorded id is `clusterID`; undefined when there is
 * none. A registration whose own row is not recorded yet counts as the newest.
 */
export function sameMember(name: string, clusterID: string, identities: ReadonlyMap<string, RecordedIdentity>): SameMember | undefined {
  const others = namesById(identities).get(clusterID)?.filter((n) => n !== name) ?? [];
  if (others.length === 0) return undefined;
  const newest = '\uffff';
  const since = (n: string) => (n === name && identities.get(n)?.clusterID !== clusterID ? newest : (identities.get(n)?.registeredAt ?? newest));
  const [syncedBy] = [name, ...others].sort((a, b) => (since(a) < since(b) ? -1 : since(a) > since(b) ? 1 : a < b ? -1 : a > b ? 1 : 0));
  return { others, syncedBy };
}

/** The condition a registration of a member registered more than once shows (names only). */
export function duplicateConditionOf(name: string, same: SameMember, clusterID: string, since: string): { type: typeof duplicateCondition; status: 'True'; reason: string; message: string; lastTransitionTime: string } {
  const list = same.others.join(', ');
  const message =
    same.syncedBy === name
      ? `the member cluster ${clusterID} is also registered as ${list}: it is synced under this name only, so each of its objects is stored and counted once`
      : `the member cluster ${clusterID} is also registered as ${list}: it is synced as ${same.syncedBy} (registered first), not under this name; remove one of the registrations`;
  return { type: duplicateCondition, status: 'True', reason: sameClusterReason, message, lastTransitionTime: since };
}

/** Whether a cluster's status (a clusters row, a Cluster object's status) says it is a duplicate registration, not synced. */
export function isDuplicateStatus(status: Record<string, unknown>): boolean {
  return status.phase === duplicateReason;
}
