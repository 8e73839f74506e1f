// The `ClusterSource` kind (clustersources.panoptes.io/v1alpha1, cluster-scoped): where on the
// host cluster Panoptes finds member clusters that are already described somewhere, so that
// they join by themselves — Cluster API's kubeconfig Secrets, Argo CD's cluster Secrets,
// Karmada's `Cluster` objects, SIG Multicluster's ClusterProfiles, or any Secret holding a kubeconfig. synchro's importer
// (synchro/import/) turns each source object into an ordinary `Cluster` whose spec.source names
// the ClusterSource (`clustersource/<name>`) and whose credentials stay in the source Secret
// (named by reference, never copied, never served).
//
// This module is the contract the apiserver and synchro share: the types, the defaults, the
// validation of a spec, the allowlist of what is served of it, and the names imported
// Clusters get. Pure: no I/O.
import { fieldDuplicate, fieldForbidden, fieldInvalid, fieldNotSupported, fieldRequired, uniqueStrings, type FieldError } from '../kube/field-errors.ts';
import { objectMetaShape, type Shape } from '../kube/known-fields.ts';
import { invalidLabelKey, invalidLabelValue } from '../kube/labels.ts';
import { dnsLabelProblem } from '../kube/names.ts';
import { mcsRolesField, validateMcsRoles, type McsRoles } from './mcs-roles.ts';
import { parsePattern, PatternError } from './resource-patterns.ts';

export const clusterSourceResource = 'clustersources';
export const clusterSourceKind = 'ClusterSource';

export const sourceTypes = ['clusterAPI', 'argoCD', 'karmada', 'kubeconfigSecrets', 'clusterProfiles'] as const;
export type SourceType = (typeof sourceTypes)[number];

/** What happens to an imported Cluster whose source object goes: deleted (its objects DELETED), or kept (Invalid, its data kept). */
export const removalPolicies = ['Delete', 'Keep'] as const;
export type RemovalPolicy = (typeof removalPolicies)[number];

/** What a name that is not a DNS label becomes: made one (lowercase, other characters `-`, a hash when cut), or the cluster is not imported. */
export const invalidNameRules = ['Sanitize', 'Reject'] as const;
export type InvalidNameRule = (typeof invalidNameRules)[number];

export const kubeconfigContexts = ['Current', 'All'] as const;

/**
 * How a ClusterSource of type clusterProfiles obtains the credentials of a ClusterProfile's
 * access provider (KEP-5339): Secret (Panoptes reads them from a Secret of the profile's
 * namespace, which must name the server they are for) or Exec (the exec plugin of that name
 * that synchro's --clusterprofile-provider-file configures; never a command of the profile).
 */
export const profileProviderTypes = ['Secret', 'Exec'] as const;
export type ProfileProviderType = (typeof profileProviderTypes)[number];
export interface ProfileProvider {
  /** The name of the access provider in the profile's status.accessProviders (credentialProviders). */
  name: string;
  type: ProfileProviderType;
}

export const selectorOperators = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;

export interface LabelSelectorSpec {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: (typeof selectorOperators)[number]; values?: string[] }>;
}

export interface ClusterSourceSpec {
  type: SourceType;
  /** Namespaces of the host cluster read for source objects (and, for Karmada, the Secrets its Clusters name). */
  namespaces: string[];
  /** Only source objects with these labels (on top of what the type requires). */
  selector?: LabelSelectorSpec;
  naming?: { template?: string; prefix?: string; invalidNames?: InvalidNameRule };
  /**
   * What every imported cluster syncs (as a Cluster's spec.resources and spec.namespaces), and
   * whether it may provide and consume multi-cluster Services (api/mcs-roles.ts: neither unless true).
   */
  defaults?: { resources?: string[]; namespaces?: { include?: string[]; exclude?: string[] }; multiClusterServices?: Partial<McsRoles> };
  onSourceRemoval?: RemovalPolicy;
  clusterAPI?: { provisionedOnly?: boolean };
  kubeconfigSecrets?: { key?: string; contexts?: (typeof kubeconfigContexts)[number] };
  /** The access providers used, first match wins (as upstream's pkg/access picks the first provider of its configuration the profile offers). */
  clusterProfiles?: { providers: ProfileProvider[] };
}

export interface ClusterSourceFailure {
  /** The source object, e.g. `Secret fleet/east-kubeconfig`. */
  object: string;
  /** The Cluster name it would have, when there is one. */
  cluster?: string;
  reason: 'Invalid' | 'NameClash' | 'InvalidName';
  message: string;
}

export interface ClusterSourceStatus {
  observedGeneration?: number;
  imported?: number;
  failed?: number;
  failures?: ClusterSourceFailure[];
  conditions?: Array<{ type: string; status: string; reason: string; message: string; lastTransitionTime: string }>;
}

/** Set on every ClusterSource: the importer releases it once the source's Clusters are gone. */
export const clusterSourceFinalizer = 'panoptes.io/import';

/** spec.source of an imported Cluster: the ClusterSource it comes from, as kubectl names it. */
export const importedSource = (sourceName: string): string => `clustersource/${sourceName}`;
/** The ClusterSource an imported Cluster's spec.source names, or undefined for any other Cluster. */
export function importedFrom(spec: unknown): string | undefined {
  if (!isRecord(spec) || typeof spec.source !== 'string') return undefined;
  return spec.source.startsWith('clustersource/') ? spec.source.slice('clustersource/'.length) : undefined;
}

export const defaultNameTemplate = '{name}';
export const nameVariables = ['name', 'namespace', 'context'] as const;
export const defaultKubeconfigKey = 'kubeconfig';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export const clusterSourceShape: Shape = {
  apiVersion: true,
  kind: true,
  metadata: objectMetaShape,
  spec: {
    type: true,
    namespaces: true,
    selector: { matchLabels: true, matchExpressions: { '[]': { key: true, operator: true, values: true } } },
    naming: { template: true, prefix: true, invalidNames: true },
    defaults: { resources: true, namespaces: { include: true, exclude: true }, [mcsRolesField]: { provider: true, consumer: true } },
    onSourceRemoval: true,
    clusterAPI: { provisionedOnly: true },
    kubeconfigSecrets: { key: true, contexts: true },
    clusterProfiles: { providers: { '[]': { name: true, type: true } } },
  },
  status: true,
};

function oneOf<T extends string>(errs: FieldError[], path: string, v: unknown, values: readonly T[]): void {
  if (v !== undefined && !(values as readonly unknown[]).includes(v)) errs.push(fieldNotSupported(path, v, [...values]));
}

function validateSelector(errs: FieldError[], v: unknown): void {
  const p = 'spec.selector';
  if (v === undefined) return;
  if (!isRecord(v)) return void errs.push(fieldInvalid(p, v, 'must be a label selector: matchLabels and/or matchExpressions'));
  if (v.matchLabels !== undefined) {
    if (!isRecord(v.matchLabels)) errs.push(fieldInvalid(`${p}.matchLabels`, v.matchLabels, 'must be a map of label keys to values'));
    else
      for (const [k, x] of Object.entries(v.matchLabels)) {
        const bad = invalidLabelKey(k) ?? (typeof x === 'string' ? invalidLabelValue(x) : 'values must be strings');
        if (bad) errs.push(fieldInvalid(`${p}.matchLabels`, k, bad));
      }
  }
  if (v.matchExpressions === undefined) return;
  if (!Array.isArray(v.matchExpressions)) return void errs.push(fieldInvalid(`${p}.matchExpressions`, v.matchExpressions, 'must be a list'));
  v.matchExpressions.forEach((e, i) => {
    const q = `${p}.matchExpressions[${i}]`;
    if (!isRecord(e)) return void errs.push(fieldInvalid(q, e, 'must be an object with key, operator and values'));
    const badKey = typeof e.key === 'string' ? invalidLabelKey(e.key) : 'must be a label key';
    if (badKey) errs.push(fieldInvalid(`${q}.key`, e.key, badKey));
    oneOf(errs, `${q}.operator`, e.operator, selectorOperators);
    const values = Array.isArray(e.values) ? e.values : [];
    if (e.values !== undefined && (!Array.isArray(e.values) || !e.values.every((x) => typeof x === 'string'))) errs.push(fieldInvalid(`${q}.values`, e.values, 'must be a list of strings'));
    // metav1.LabelSelectorRequirement: In/NotIn need values, Exists/DoesNotExist take none.
    if ((e.operator === 'In' || e.operator === 'NotIn') && values.length === 0) errs.push(fieldRequired(`${q}.values`, 'must be specified when `operator` is \'In\' or \'NotIn\''));
    if ((e.operator === 'Exists' || e.operator === 'DoesNotExist') && values.length > 0) errs.push(fieldForbidden(`${q}.values`, 'may not be specified when `operator` is \'Exists\' or \'DoesNotExist\''));
  });
}

function validateProfileProviders(errs: FieldError[], v: unknown): void {
  const p = 'spec.clusterProfiles.providers';
  const providers = isRecord(v) ? v.providers : undefined;
  if (v !== undefined && !isRecord(v)) return void errs.push(fieldInvalid('spec.clusterProfiles', v, 'must be an object with providers'));
  if (!Array.isArray(providers) || providers.length === 0) return void errs.push(fieldRequired(p, `the access providers to use, each a name and a type (${profileProviderTypes.join(' or ')})`));
  const seen = new Set<string>();
  providers.forEach((x, i) => {
    const q = `${p}[${i}]`;
    if (!isRecord(x)) return void errs.push(fieldInvalid(q, x, 'must be an object with name and type'));
    if (typeof x.name !== 'string' || !/^[-._a-zA-Z0-9]{1,253}$/.test(x.name)) errs.push(fieldInvalid(`${q}.name`, x.name, "must be an access provider's name: alphanumerics, '-', '_' or '.'"));
    else if (seen.has(x.name)) errs.push(fieldDuplicate(`${q}.name`, x.name));
    else seen.add(x.name);
    if (x.type === undefined) errs.push(fieldRequired(`${q}.type`, profileProviderTypes.join(' or ')));
    else oneOf(errs, `${q}.type`, x.type, profileProviderTypes);
  });
}

function validateNaming(errs: FieldError[], v: unknown): void {
  const p = 'spec.naming';
  if (v === undefined) return;
  if (!isRecord(v)) return void errs.push(fieldInvalid(p, v, 'must be an object with template, prefix and/or invalidNames'));
  if (v.template !== undefined) {
    if (typeof v.template !== 'string' || v.template === '') errs.push(fieldInvalid(`${p}.template`, v.template, 'must be a non-empty string'));
    else {
      for (const m of v.template.matchAll(/\{([^}]*)\}/g)) {
        if (!(nameVariables as readonly string[]).includes(m[1])) errs.push(fieldInvalid(`${p}.template`, v.template, `unknown variable {${m[1]}}: use ${nameVariables.map((x) => `{${x}}`).join(', ')}`));
      }
      if (!/\{(name|context)\}/.test(v.template)) errs.push(fieldInvalid(`${p}.template`, v.template, 'must use {name} (or {context}): every source object needs a name of its own'));
    }
  }
  if (v.prefix !== undefined) {
    if (typeof v.prefix !== 'string') errs.push(fieldInvalid(`${p}.prefix`, v.prefix, 'must be a string'));
    else if (v.prefix !== '' && !/^[a-z0-9]([-a-z0-9]*)?$/.test(v.prefix)) errs.push(fieldInvalid(`${p}.prefix`, v.prefix, 'must start a DNS label: lowercase letters, digits and \'-\', starting with a letter or digit'));
    else if (v.prefix.length > 40) errs.push(fieldInvalid(`${p}.prefix`, v.prefix, 'must be at most 40 characters (a Cluster name is at most 63)'));
  }
  oneOf(errs, `${p}.invalidNames`, v.invalidNames, invalidNameRules);
}

function validateDefaults(errs: FieldError[], v: unknown): void {
  const p = 'spec.defaults';
  if (v === undefined) return;
  if (!isRecord(v)) return void errs.push(fieldInvalid(p, v, `must be an object with resources, namespaces and/or ${mcsRolesField}`));
  errs.push(...validateMcsRoles(v[mcsRolesField], `${p}.${mcsRolesField}`));
  if (v.resources !== undefined) {
    if (Array.isArray(v.resources) && v.resources.length === 0) errs.push(fieldInvalid(`${p}.resources`, v.resources, 'must name at least one resource pattern; leave it out for the default set'));
    uniqueStrings(errs, `${p}.resources`, v.resources, (s, q) => {
      try {
        parsePattern(s);
      } catch (err) {
        if (!(err instanceof PatternError)) throw err;
        errs.push(fieldInvalid(q, s, err.message));
      }
    });
  }
  if (v.namespaces === undefined) return;
  if (!isRecord(v.namespaces)) return void errs.push(fieldInvalid(`${p}.namespaces`, v.namespaces, 'must be an object with include and/or exclude lists'));
  for (const k of ['include', 'exclude'] as const) {
    if (v.namespaces[k] === undefined) continue;
    uniqueStrings(errs, `${p}.namespaces.${k}`, v.namespaces[k], (s, q) => {
      const why = dnsLabelProblem(s);
      if (why) errs.push(fieldInvalid(q, s, why));
    });
  }
}

/** Every problem with the spec of a ClusterSource, one error per field. */
export function validateClusterSourceSpec(spec: unknown): FieldError[] {
  if (spec === undefined || spec === null) return [fieldRequired('spec', 'the source: at least spec.type and spec.namespaces')];
  if (!isRecord(spec)) return [fieldInvalid('spec', spec, 'must be an object')];
  const errs: FieldError[] = [];
  if (spec.type === undefined) errs.push(fieldRequired('spec.type', `one of ${sourceTypes.join(', ')}`));
  else oneOf(errs, 'spec.type', spec.type, sourceTypes);
  if (spec.namespaces === undefined || (Array.isArray(spec.namespaces) && spec.namespaces.length === 0)) {
    errs.push(fieldRequired('spec.namespaces', 'the namespaces of the host cluster to read (Panoptes reads source objects in the namespaces named, nowhere else)'));
  } else {
    uniqueStrings(errs, 'spec.namespaces', spec.namespaces, (s, q) => {
      const why = dnsLabelProblem(s);
      if (why) errs.push(fieldInvalid(q, s, why));
    });
  }
  validateSelector(errs, spec.selector);
  validateNaming(errs, spec.naming);
  validateDefaults(errs, spec.defaults);
  oneOf(errs, 'spec.onSourceRemoval', spec.onSourceRemoval, removalPolicies);
  const only = (field: 'clusterAPI' | 'kubeconfigSecrets' | 'clusterProfiles', type: SourceType) => {
    if (spec[field] !== undefined && spec.type !== type) errs.push(fieldForbidden(`spec.${field}`, `only for spec.type ${type}`));
  };
  only('clusterAPI', 'clusterAPI');
  only('kubeconfigSecrets', 'kubeconfigSecrets');
  only('clusterProfiles', 'clusterProfiles');
  if (spec.type === 'clusterProfiles') validateProfileProviders(errs, spec.clusterProfiles);
  if (spec.clusterAPI !== undefined) {
    if (!isRecord(spec.clusterAPI)) errs.push(fieldInvalid('spec.clusterAPI', spec.clusterAPI, 'must be an object'));
    else if (spec.clusterAPI.provisionedOnly !== undefined && typeof spec.clusterAPI.provisionedOnly !== 'boolean') errs.push(fieldInvalid('spec.clusterAPI.provisionedOnly', spec.clusterAPI.provisionedOnly, 'must be true or false'));
  }
  if (spec.kubeconfigSecrets !== undefined) {
    const k = spec.kubeconfigSecrets;
    if (!isRecord(k)) errs.push(fieldInvalid('spec.kubeconfigSecrets', k, 'must be an object'));
    else {
      if (k.key !== undefined && (typeof k.key !== 'string' || !/^[-._a-zA-Z0-9]+$/.test(k.key))) errs.push(fieldInvalid('spec.kubeconfigSecrets.key', k.key, 'must be a Secret data key: alphanumerics, \'-\', \'_\' or \'.\''));
      oneOf(errs, 'spec.kubeconfigSecrets.contexts', k.contexts, kubeconfigContexts);
    }
  }
  return errs;
}

/**
 * The one allowlist of what is served of a ClusterSource spec: the fields of clusterSourceShape,
 * of their types, in the order they were written, and nothing else.
 */
export function servedClusterSourceSpec(spec: unknown): Record<string, unknown> {
  return served(spec, (clusterSourceShape as { spec: Shape }).spec) as Record<string, unknown>;
}

function served(v: unknown, shape: Shape): unknown {
  if (shape === true) return typeof v === 'string' || typeof v === 'boolean' || typeof v === 'number' ? v : Array.isArray(v) ? v.filter((x) => typeof x === 'string') : isRecord(v) ? Object.fromEntries(Object.entries(v).filter(([, x]) => typeof x === 'string')) : undefined;
  if (Object.hasOwn(shape, '[]')) return Array.isArray(v) ? v.map((x) => served(x, shape['[]'])).filter((x) => x !== undefined) : undefined;
  if (!isRecord(v)) return undefined;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) {
    if (!Object.hasOwn(shape, k)) continue;
    const x = served(v[k], shape[k]);
    if (x !== undefined) out[k] = x;
  }
  return out;
}

/** The spec with its defaults (what the importer works from). */
export function withDefaults(spec: ClusterSourceSpec): Required<Pick<ClusterSourceSpec, 'onSourceRemoval'>> & ClusterSourceSpec & { naming: { template: string; prefix: string; invalidNames: InvalidNameRule } } {
  return {
    ...spec,
    onSourceRemoval: spec.onSourceRemoval ?? 'Delete',
    naming: { template: spec.naming?.template ?? defaultNameTemplate, prefix: spec.naming?.prefix ?? '', invalidNames: spec.naming?.invalidNames ?? 'Sanitize' },
  };
}

/** The label selector of a spec as the query parameter `labelSelector` writes it ('' for none). */
export function selectorQuery(s: LabelSelectorSpec | undefined, required: string[] = []): string {
  const parts = [...required];
  for (const [k, v] of Object.entries(s?.matchLabels ?? {})) parts.push(`${k}=${v}`);
  for (const e of s?.matchExpressions ?? []) {
    if (e.operator === 'In') parts.push(`${e.key} in (${(e.values ?? []).join(',')})`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${(e.values ?? []).join(',')})`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else parts.push(`!${e.key}`);
  }
  return parts.join(',');
}
