// Field validation errors as apimachinery's field.Error and errors.NewInvalid word them: one
// cause per field (`reason` FieldValueInvalid, FieldValueRequired, ...), and the Status
// message `Kind.group "name" is invalid: [field: Invalid value: "x": detail, ...]`.
import { StatusError, type StatusCause } from './status.ts';

export type FieldErrorType = 'Invalid' | 'Required' | 'NotSupported' | 'Forbidden' | 'Duplicate' | 'TooLong' | 'TooMany';

/** field.ErrorType: the cause reason and the words that start the message. */
const types: Record<FieldErrorType, { reason: string; words: string; showsValue: boolean }> = {
  Invalid: { reason: 'FieldValueInvalid', words: 'Invalid value', showsValue: true },
  Required: { reason: 'FieldValueRequired', words: 'Required value', showsValue: false },
  NotSupported: { reason: 'FieldValueNotSupported', words: 'Unsupported value', showsValue: true },
  Forbidden: { reason: 'FieldValueForbidden', words: 'Forbidden', showsValue: false },
  Duplicate: { reason: 'FieldValueDuplicate', words: 'Duplicate value', showsValue: true },
  TooLong: { reason: 'FieldValueTooLong', words: 'Too long', showsValue: false },
  TooMany: { reason: 'FieldValueTooMany', words: 'Too many', showsValue: true },
};

export interface FieldError {
  type: FieldErrorType;
  /** The JSON path of the field: `spec.server`, `spec.resources[0]`, `metadata.labels`. */
  field: string;
  /** The offending value (shown for Invalid, NotSupported and Duplicate). */
  value?: unknown;
  detail?: string;
}

/** A value already in Go's %#v syntax (a struct kube reports as it is, `core.ServicePort{...}`): shown verbatim. */
export class GoSyntax {
  constructor(readonly text: string) {}
}

/** Go's %v of a value inside "Invalid value: ..." (strings quoted, as field.Error prints them). */
function show(value: unknown): string {
  if (value instanceof GoSyntax) return value.text;
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null || value === undefined) return '"null"';
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return `[]string{${value.map((v) => JSON.stringify(v)).join(', ')}}`;
  return JSON.stringify(value);
}

/** field.Error.ErrorBody(): `Invalid value: "x": detail`. */
export function errorBody(e: FieldError): string {
  const t = types[e.type];
  let s = t.showsValue ? `${t.words}: ${show(e.value)}` : t.words;
  if (e.detail) s += `: ${e.detail}`;
  return s;
}

/** field.Error.Error(): `spec.server: Invalid value: "x": detail`. */
export const errorText = (e: FieldError): string => `${e.field}: ${errorBody(e)}`;

export const fieldInvalid = (field: string, value: unknown, detail: string): FieldError => ({ type: 'Invalid', field, value, detail });
export const fieldRequired = (field: string, detail = ''): FieldError => ({ type: 'Required', field, detail });
export const fieldForbidden = (field: string, detail: string): FieldError => ({ type: 'Forbidden', field, detail });
export const fieldDuplicate = (field: string, value: unknown): FieldError => ({ type: 'Duplicate', field, value });
export const fieldTooLong = (field: string, max: number): FieldError => ({ type: 'TooLong', field, detail: `must have at most ${max} bytes` });
/** field.TooMany: `Too many: 1001: must have at most 1000 items`. */
export const fieldTooMany = (field: string, actual: number, max: number): FieldError => ({ type: 'TooMany', field, value: actual, detail: `must have at most ${max} ${max === 1 ? 'item' : 'items'}` });
/** field.NotSupported: the detail lists the supported values, quoted. */
export const fieldNotSupported = (field: string, value: unknown, supported: string[]): FieldError => ({
  type: 'NotSupported',
  field,
  value,
  detail: `supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`,
});

/** utilerrors.NewAggregate(...).Error(): one message as is, several deduplicated in brackets. */
export function aggregateText(messages: string[]): string {
  const seen: string[] = [];
  for (const m of messages) if (!seen.includes(m)) seen.push(m);
  return seen.length === 1 ? seen[0] : `[${seen.join(', ')}]`;
}

/**
 * errors.NewInvalid: 422 `Invalid`, message `Kind.group "name" is invalid: <aggregate>`, details
 * {name, group, kind, causes}. `kind` is the Kind (Cluster), not the resource.
 */
export function invalidObject(kind: { group: string; kind: string }, name: string, errs: FieldError[]): StatusError {
  const qualified = kind.group ? `${kind.kind}.${kind.group}` : kind.kind;
  const causes: StatusCause[] = errs.map((e) => ({ reason: types[e.type].reason, message: errorBody(e), field: e.field }));
  // StatusDetails' name and group are omitempty.
  const details = { ...(name ? { name } : {}), ...(kind.group ? { group: kind.group } : {}), kind: kind.kind, causes };
  return new StatusError('Invalid', `${qualified} ${JSON.stringify(name)} is invalid: ${aggregateText(errs.map(errorText))}`, details);
}

/**
 * Checks a list of strings field by field: not a list (Invalid), an item not a string (Invalid)
 * or given twice (Duplicate, as kube's validation of sets), then `each` on every other item.
 */
export function uniqueStrings(errs: FieldError[], path: string, v: unknown, each: (s: string, p: string) => void): void {
  if (!Array.isArray(v)) {
    errs.push(fieldInvalid(path, v, 'must be a list of strings'));
    return;
  }
  const seen = new Set<string>();
  v.forEach((s, i) => {
    const p = `${path}[${i}]`;
    if (typeof s !== 'string') return void errs.push(fieldInvalid(p, s, 'must be a string'));
    if (seen.has(s)) return void errs.push(fieldDuplicate(p, s));
    seen.add(s);
    each(s, p);
  });
}
