// Field selectors as kube-apiserver parses them (k8s.io/apimachinery/pkg/fields): terms
// `f=v`, `f==v`, `f!=v` joined by commas, with `\,` `\=` `\\` escapes in values. Which fields
// a kind can be selected by is fixed per resource, as in kube-apiserver's registries.
import { StatusError } from './status.ts';

export interface FieldRequirement {
  field: string;
  operator: '=' | '!=';
  value: string;
}

export type FieldSelector = FieldRequirement[];

export class FieldSelectorError extends StatusError {
  override name = 'FieldSelectorError';
  constructor(message: string) {
    super('BadRequest', message);
  }
}

function splitTerms(input: string): string[] {
  const terms: string[] = [];
  let cur = '';
  for (let i = 0; i < input.length; i++) {
    const c = input[i];
    if (c === '\\' && i + 1 < input.length) {
      cur += c + input[i + 1];
      i++;
    } else if (c === ',') {
      terms.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  terms.push(cur);
  return terms;
}

function unescape(value: string, input: string): string {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === '\\') {
      const n = value[i + 1];
      if (n === '\\' || n === ',' || n === '=') {
        out += n;
        i++;
        continue;
      }
      throw new FieldSelectorError(`invalid field selector ${JSON.stringify(input)}: invalid escape sequence`);
    }
    if (c === '=' || c === ',') throw new FieldSelectorError(`invalid field selector ${JSON.stringify(input)}: unescaped ${c} in value`);
    out += c;
  }
  return out;
}

/** Parses a field selector string. The empty string selects everything. */
export function parseFieldSelector(input: string): FieldSelector {
  if (input.trim() === '') return [];
  return splitTerms(input).map((term) => {
    const m = /^([^=!]*)(!=|==|=)(.*)$/s.exec(term);
    if (!m) throw new FieldSelectorError(`invalid field selector ${JSON.stringify(input)}: term ${JSON.stringify(term)} has no operator (=, == or !=)`);
    const field = m[1].trim();
    if (field === '') throw new FieldSelectorError(`invalid field selector ${JSON.stringify(input)}: empty field name`);
    return { field, operator: m[2] === '!=' ? '!=' : '=', value: unescape(m[3], input) } satisfies FieldRequirement;
  });
}

type Obj = Record<string, unknown>;
type Extractor = (o: Obj) => string;

function path(...keys: string[]): Extractor {
  return (o) => {
    let cur: unknown = o;
    for (const k of keys) {
      if (cur === null || typeof cur !== 'object') return '';
      cur = (cur as Obj)[k];
    }
    if (cur === undefined || cur === null) return '';
    return typeof cur === 'string' ? cur : String(cur);
  };
}

const boolPath = (...keys: string[]): Extractor => (o) => (path(...keys)(o) === 'true' ? 'true' : 'false');

/** Per-resource selectable fields beyond metadata.name and metadata.namespace, keyed `group/resource`. */
const kindFields: Record<string, Record<string, Extractor>> = {
  '/pods': {
    'spec.nodeName': path('spec', 'nodeName'),
    'spec.restartPolicy': path('spec', 'restartPolicy'),
    'spec.schedulerName': path('spec', 'schedulerName'),
    'spec.serviceAccountName': path('spec', 'serviceAccountName'),
    'spec.hostNetwork': boolPath('spec', 'hostNetwork'),
    'status.phase': path('status', 'phase'),
    'status.podIP': path('status', 'podIP'),
    'status.nominatedNodeName': path('status', 'nominatedNodeName'),
  },
  '/nodes': { 'spec.unschedulable': boolPath('spec', 'unschedulable') },
  '/namespaces': { 'status.phase': path('status', 'phase') },
  '/secrets': { type: path('type') },
  '/services': { 'spec.clusterIP': path('spec', 'clusterIP'), 'spec.type': path('spec', 'type') },
  '/replicationcontrollers': { 'status.replicas': path('status', 'replicas') },
  '/events': {
    'involvedObject.kind': path('involvedObject', 'kind'),
    'involvedObject.namespace': path('involvedObject', 'namespace'),
    'involvedObject.name': path('involvedObject', 'name'),
    'involvedObject.uid': path('involvedObject', 'uid'),
    'involvedObject.apiVersion': path('involvedObject', 'apiVersion'),
    'involvedObject.resourceVersion': path('involvedObject', 'resourceVersion'),
    'involvedObject.fieldPath': path('involvedObject', 'fieldPath'),
    reason: path('reason'),
    reportingComponent: path('reportingComponent'),
    source: (o) => path('reportingComponent')(o) || path('source', 'component')(o),
    type: path('type'),
  },
  'events.k8s.io/events': {
    'regarding.kind': path('regarding', 'kind'),
    'regarding.namespace': path('regarding', 'namespace'),
    'regarding.name': path('regarding', 'name'),
    'regarding.uid': path('regarding', 'uid'),
    reason: path('reason'),
    reportingController: path('reportingController'),
    type: path('type'),
  },
  'apps/replicasets': { 'status.replicas': path('status', 'replicas') },
  'batch/jobs': { 'status.successful': path('status', 'succeeded') },
  'certificates.k8s.io/certificatesigningrequests': { 'spec.signerName': path('spec', 'signerName') },
};

/** The selectable fields of a resource, beyond metadata.name and metadata.namespace. */
export function kindFieldNames(group: string, resource: string): string[] {
  return Object.keys(kindFields[`${group}/${resource}`] ?? {});
}

/**
 * The per-kind field values of an object (not metadata.name / metadata.namespace), as kube-apiserver
 * computes them for field selectors. Empty for kinds without selectable fields.
 */
export function kindFieldValues(group: string, resource: string, object: Obj): Record<string, string> {
  const extractors = kindFields[`${group}/${resource}`];
  const out: Record<string, string> = {};
  if (!extractors) return out;
  for (const [name, extract] of Object.entries(extractors)) out[name] = extract(object);
  return out;
}

/** Rejects a field a resource cannot be selected by, as kube-apiserver does (400). */
export function checkFieldSelector(group: string, resource: string, selector: FieldSelector): void {
  const allowed = kindFields[`${group}/${resource}`] ?? {};
  for (const r of selector) {
    if (r.field === 'metadata.name' || r.field === 'metadata.namespace') continue;
    if (!(r.field in allowed)) {
      throw new FieldSelectorError(`field label not supported: ${r.field}`);
    }
  }
}

/** Whether an object matches a field selector (fields already checked with checkFieldSelector). */
export function matchesFields(selector: FieldSelector, group: string, resource: string, object: Obj): boolean {
  if (selector.length === 0) return true;
  const meta = (object.metadata ?? {}) as Obj;
  const values: Record<string, string> = {
    'metadata.name': String(meta.name ?? ''),
    'metadata.namespace': String(meta.namespace ?? ''),
    ...kindFieldValues(group, resource, object),
  };
  return selector.every((r) => (values[r.field] === r.value) === (r.operator === '='));
}
