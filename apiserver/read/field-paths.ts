// Field selector terms on any JSON path (storage/json-fields.ts), beside kube's own.
//
// In `fieldSelector` (kubectl --field-selector), a field that starts with `.` or `[` is a JSON
// path, as kubectl's JSONPath writes one: `.status.phase`, `.metadata.annotations['a/b']`,
// `.spec.template.spec.containers[*].image`, with `=`, `==`, `!=`, `in (a,b)`, `notin (a,b)`,
// a bare path (exists) and `!path` (absent). Every other field is kube's, with kube's exact
// behaviour: only metadata.name, metadata.namespace and the kind's selectable fields, only
// =, == and !=, anything else a 400 (kube-apiserver answers "field label not supported"), so
// a selector without JSON paths is parsed by kube's grammar alone, as it always was.
//
// As a label key, `field.panoptes.io/<path>` (a dotted path: label keys hold no brackets) is a
// JSON path term with the label operators =, ==, !=, in, notin, exists and !, so that
// `kubectl get -l` expresses it.
import { checkFieldSelector, parseFieldSelector, type FieldSelector } from '../../kube/fields.ts';
import type { LabelSelector } from '../../kube/labels.ts';
import { badRequest } from '../../kube/status.ts';
import type { JsonFieldRequirement } from '../../storage/json-fields.ts';

/** Label keys that are field terms (external/selector.ts reads the same prefix; it imports params.ts, which imports this). */
const fieldLabelPrefix = 'field.panoptes.io/';

/** Bounds of what one selector may ask: terms, steps of a path, values of a term. */
const maxTerms = 20;
const maxSteps = 32;
const maxValues = 100;

/** A JSON path from the start of `s`: its steps and where it ends. */
function readPath(s: string, source: string): { path: Array<string | null>; end: number } {
  const path: Array<string | null> = [];
  let i = 0;
  const fail = (why: string) => badRequest(`${source}: invalid JSON path ${JSON.stringify(s)}: ${why}`);
  while (i < s.length && (s[i] === '.' || s[i] === '[')) {
    if (s[i] === '.') {
      const m = /^\.([A-Za-z0-9_$-]+)/.exec(s.slice(i));
      if (!m) throw fail(`expected a key after "." at ${i} (keys with other characters go in brackets: ['a/b'])`);
      path.push(m[1]);
      i += m[0].length;
    } else if (s.startsWith('[*]', i)) {
      path.push(null);
      i += 3;
    } else {
      const m = /^\[(['"])([^'"\\\u0000-\u001f]+)\1\]/.exec(s.slice(i));
      if (!m) throw fail(`expected ['key'] or [*] at ${i} (array indexes are not supported)`);
      path.push(m[2]);
      i += m[0].length;
    }
    if (path.length > maxSteps) throw fail(`more than ${maxSteps} steps`);
  }
  if (path.length === 0) throw fail('a JSON path starts with "." or "["');
  return { path, end: i };
}

/** Splits at commas outside parentheses, brackets and quotes; a backslash keeps the next character. */
function splitTerms(input: string): string[] {
  const terms: string[] = [];
  let cur = '';
  let depth = 0;
  let quote = '';
  for (let i = 0; i < input.length; i++) {
    const c = input[i];
    if (c === '\\' && i + 1 < input.length) {
      cur += c + input[++i];
      continue;
    }
    if (quote) quote = c === quote ? '' : quote;
    else if (c === "'" || c === '"') quote = c;
    else if (c === '(' || c === '[') depth++;
    else if (c === ')' || c === ']') depth--;
    else if (c === ',' && depth === 0) {
      terms.push(cur);
      cur = '';
      continue;
    }
    cur += c;
  }
  terms.push(cur);
  return terms;
}

/** A value with kube's escapes (`\,` `\=` `\\`, and `\(` `\)` here) undone. */
function unescape(v: string, source: string): string {
  return v.replace(/\\(.)/g, (_, c: string) => {
    if (!',=\\()'.includes(c)) throw badRequest(`${source}: invalid escape sequence \\${c}`);
    return c;
  });
}

/** One JSON path term: `path`, `!path`, `path=v`, `path==v`, `path!=v`, `path in (a,b)`, `path notin (a,b)`. */
function parseJsonTerm(term: string, source: string): JsonFieldRequirement {
  const negated = term.startsWith('!');
  const { path, end } = readPath(negated ? term.slice(1) : term, source);
  const rest = (negated ? term.slice(1) : term).slice(end);
  if (negated) {
    if (rest.trim() !== '') throw badRequest(`${source}: "!" takes a path alone: ${JSON.stringify(term)}`);
    return { path, operator: '!', values: [] };
  }
  if (rest.trim() === '') return { path, operator: 'exists', values: [] };
  const set = /^\s+(in|notin)\s*\((.*)\)\s*$/s.exec(rest);
  if (set) {
    const values = splitTerms(set[2]).map((v) => unescape(v.trim(), source));
    if (values.length > maxValues) throw badRequest(`${source}: more than ${maxValues} values in ${JSON.stringify(term)}`);
    return { path, operator: set[1] as 'in' | 'notin', values };
  }
  const op = /^(!=|==|=)(.*)$/s.exec(rest);
  if (!op) throw badRequest(`${source}: term ${JSON.stringify(term)}: expected =, ==, !=, in (...) or notin (...) after the path`);
  if (/(?<!\\)[=()]/.test(op[2])) throw badRequest(`${source}: term ${JSON.stringify(term)}: unescaped "=", "(" or ")" in the value`);
  return { path, operator: op[1] === '!=' ? 'notin' : 'in', values: [unescape(op[2], source)] };
}

/** `fieldSelector`: kube's terms (checked against the kind) and JSON path terms. */
export function parseFieldSelectorWithPaths(input: string, group: string, resource: string): { fieldSelector: FieldSelector; jsonFields: JsonFieldRequirement[] } {
  const terms = input.trim() === '' ? [] : splitTerms(input);
  const isPath = (term: string) => /^!?\s*[.[]/.test(term.trimStart());
  if (!terms.some(isPath)) {
    const fieldSelector = parseFieldSelector(input);
    checkFieldSelector(group, resource, fieldSelector);
    return { fieldSelector, jsonFields: [] };
  }
  if (terms.length > maxTerms) throw badRequest(`fieldSelector: more than ${maxTerms} terms`);
  const kube: string[] = [];
  const jsonFields: JsonFieldRequirement[] = [];
  for (const term of terms) {
    if (isPath(term)) jsonFields.push(parseJsonTerm(term.trim(), 'fieldSelector'));
    else kube.push(term);
  }
  const fieldSelector = parseFieldSelector(kube.join(','));
  checkFieldSelector(group, resource, fieldSelector);
  return { fieldSelector, jsonFields };
}

/** Splits field.panoptes.io/<path> requirements out of a label selector, as JSON path terms. */
export function extractFieldKeys(selector: LabelSelector): { rest: LabelSelector; jsonFields: JsonFieldRequirement[] } {
  const rest: LabelSelector = [];
  const jsonFields: JsonFieldRequirement[] = [];
  for (const r of selector) {
    if (!r.key.startsWith(fieldLabelPrefix)) {
      rest.push(r);
      continue;
    }
    const name = r.key.slice(fieldLabelPrefix.length);
    const { path } = readPath(`.${name}`, `label key ${r.key}`);
    if (r.operator === 'gt' || r.operator === 'lt') throw badRequest(`label key ${r.key}: a JSON path term takes =, ==, !=, in, notin, exists or !, not ${r.operator === 'gt' ? '>' : '<'}`);
    jsonFields.push({ path, operator: r.operator, values: r.values });
  }
  return { rest, jsonFields };
}
