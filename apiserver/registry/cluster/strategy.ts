// The Cluster kind's strategy for the registry of own objects (apiserver/registry/generic/own-object.ts): its
// spec validated with the operator's network allowance (api/cluster.ts), the spec served from
// the allowlist (also in kubectl's last-applied-configuration annotation and in the object a
// Strict 422 shows), inline credentials split off for storage apart with the endpoint they
// were given for (what the registry calls the kind's extra: new credentials grow the
// generation), a change of that endpoint without new inline credentials refused (422),
// credentials refused in metadata, the credentials a request carries registered with the
// redactor while it is handled, objects of clusters.yaml refused (403), and the finalizer
// `panoptes.io/synchro`. A write that grants multi-cluster Service roles (spec.multiClusterServices:
// api/mcs-roles.ts) also needs `update` on `clusters/multiclusterservices` of that Cluster:
// registering a cluster is not granting it the right to provide or consume. An imported Cluster (spec.source `clustersource/<name>`) is its
// ClusterSource's: a change of its spec is refused with 422 (a Forbidden cause on `spec`,
// as kube refuses a change of a field it manages — e.g. `field is immutable` — rather than
// the request as a whole: its labels and annotations stay editable), its deletion with 403.
// Stored by storage/cluster-objects.ts, which keeps the credentials
// beside the row in the same transaction.
import { clusterEndpoint, clusterFinalizer, clusterNameProblem, clusterShape, endpointBindingRule, endpointChanges, servedSpec, splitCredentials, validateClusterSpec } from '../../../api/cluster.ts';
import { importedFrom } from '../../../api/cluster-source.ts';
import { mcsRolesOf, type McsRoles } from '../../../api/mcs-roles.ts';
import { fieldForbidden, type FieldError } from '../../../kube/field-errors.ts';
import { canonicalJson } from '../../../kube/patch.ts';
import { secretValuesIn } from '../../../lib/redact.ts';
import { clusterResource, credentialsDigest, type ClusterCredentials, type ClusterObjectState } from '../../../storage/cluster-objects.ts';
import { forbiddenObject, type Obj, type OwnKind, type ShapedSpec, type WriteRules } from '../generic/own-object.ts';
import { grantPrivileges } from '../generic/mcs-grants.ts';
import { ownInfo } from '../../discovery/panoptes-group.ts';

export const clusterInfo = ownInfo(clusterResource, 'Cluster', false);
import { decodeObject } from '../../endpoints/write-request.ts';

const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const noRoles: McsRoles = { provider: false, consumer: false };

/**
 * Stored inline credentials go only where they were given for: a change of endpoint (server,
 * caData, insecureSkipTLSVerify, tlsServerName) needs new inline credentials (or a Secret
 * instead) in the same request.
 */
function bindingErrors(current: ClusterObjectState, spec: unknown): FieldError[] {
  if (current.credentialsDigest === undefined) return [];
  const { inline, secretRef } = splitCredentials(isRecord(spec) ? spec : {});
  if (inline || secretRef) return [];
  return endpointChanges(clusterEndpoint(current.object.spec), clusterEndpoint(spec)).map((f) => fieldForbidden(`spec.${f}`, endpointBindingRule));
}

/**
 * The served spec (`source: api`) and the inline credentials: new ones (bound to the endpoint
 * of the spec they come with), null to remove them (the spec names a Secret instead), or
 * undefined to keep what is stored.
 */
function shapeClusterSpec(body: Obj, current: ClusterObjectState | undefined, rules: WriteRules): ShapedSpec<ClusterCredentials | null> {
  const source = current && importedFrom(current.object.spec);
  if (current && source !== undefined) return importedSpec(body, current, source);
  const rawSpec = isRecord(body.spec) ? body.spec : {};
  const { served, inline, secretRef } = splitCredentials(rawSpec);
  const stored = current?.credentialsDigest !== undefined;
  // Stored credentials stay only while the request gives neither new ones nor a Secret.
  const errors = [...(current ? bindingErrors(current, body.spec) : []), ...validateClusterSpec(body.spec, { networks: rules.networks, storedCredentials: stored && !inline && !secretRef })];
  const spec: Obj = { ...served, source: 'api' };
  const credentials: ClusterCredentials | null | undefined = secretRef ? null : inline ? { ...inline, endpoint: clusterEndpoint(spec) } : undefined;
  const changed = !current
    ? Boolean(credentials)
    : credentials === null
      ? stored
      : credentials !== undefined && credentialsDigest(credentials) !== current.credentialsDigest;
  return {
    spec,
    errors,
    ...(credentials !== undefined ? { extra: credentials } : {}),
    extraChanged: changed,
    // Credentials are write-only: they must not reach the served object through its metadata.
    hidden: { values: Object.values(inline ?? {}).filter((v): v is string => typeof v === 'string'), why: 'the metadata carries the inline credentials of spec.credentials, which are write-only and never served' },
  };
}

/** An imported Cluster's spec stays its ClusterSource's: the same spec again, or a 422 naming the source. */
function importedSpec(body: Obj, current: ClusterObjectState, source: string): ShapedSpec<ClusterCredentials | null> {
  const spec = servedSpec(current.object.spec);
  const same = canonicalJson(servedSpec(body.spec)) === canonicalJson(spec);
  const why = `the spec of an imported Cluster is managed by ClusterSource ${source} (spec.source: ${String(spec.source)}): change the source object or the ClusterSource instead`;
  return { spec, errors: same ? [] : [fieldForbidden('spec', why)] };
}

/** The credentials a request body carries (JSON or YAML; nothing when it does not parse: the redactor's structure rules still apply). */
function requestSecrets(body: Buffer, contentType: string | undefined): string[] {
  try {
    return secretValuesIn(decodeObject(body, contentType?.includes('json') ? 'application/json' : contentType, 'Cluster'));
  } catch {
    try {
      return secretValuesIn(JSON.parse(body.toString('utf8')));
    } catch {
      return [];
    }
  }
}

export const clusterKind: OwnKind<ClusterObjectState, ClusterCredentials | null> = {
  info: clusterInfo,
  finalizer: clusterFinalizer,
  shape: clusterShape,
  servedSpec,
  nameProblem(name) {
    const why = clusterNameProblem(name);
    return why && `a Cluster name is the member cluster's name in URLs: ${why}`;
  },
  shapeSpec: shapeClusterSpec,
  /** A Cluster from clusters.yaml: the API leaves it alone. */
  refuse(current, name, verb) {
    const spec = isRecord(current.object.spec) ? current.object.spec : {};
    const source = importedFrom(spec);
    if (source !== undefined && verb === 'delete') {
      throw forbiddenObject(clusterKind, name, `it is imported by ClusterSource ${source} (spec.source: clustersource/${source}), which would import it again: delete its source object, or the ClusterSource`);
    }
    if (spec.source !== 'file') return;
    throw forbiddenObject(clusterKind, name, `it is defined in the clusters file of synchro (spec.source: file), which the API cannot ${verb}: change the file instead`);
  },
  requestSecrets,
  privileges: (current, next, name) => grantPrivileges(clusterInfo.resource, name, current ? mcsRolesOf(current.object.spec) : noRoles, mcsRolesOf(next.spec)),
  // The apiserver holds no lease: its writes are serialized by resourceVersion under the rv lock.
  write(store, _namespace, name, decide) {
    return store.writeClusterObjectWithoutLease(name, (cur) => {
      const w = decide(cur);
      return w.action === 'put' ? { action: 'put', object: w.object, ...(w.extra !== undefined ? { credentials: w.extra } : {}) } : w;
    });
  },
};
