// The external metrics file: declared metrics for what a plain count cannot say. Each rule
// names a metric, the resource it reads, which objects (selectors, namespaces, conditions on
// JSON paths) and an aggregate (count, or sum / min / max / avg of a JSON number), optionally
// one value per cluster, and what to do while a selected cluster is not Ready.
//
//   defaults:
//     whenClusterNotReady: ServeLastKnown      # or Fail; also for the plain counts
//   metrics:
//     - name: pending-jobs
//       resource: jobs.batch                   # <resource>[.<group>]
//       namespaces: all                        # all, or a list; default: the request's namespace
//       labelSelector: team=data               # same keys as a request's selector (selector.ts)
//       fieldSelector: metadata.name!=canary
//       match:
//         - { path: .status.completionTime, operator: DoesNotExist }
//       aggregate: count                       # count (default), sum, min, max, avg
//     - name: frontend-ready-replicas
//       resource: deployments.apps
//       fieldSelector: metadata.name=frontend
//       aggregate: sum
//       path: .status.readyReplicas
//       perCluster: true                       # one item per cluster, metricLabels {cluster: <name>}
//       whenClusterNotReady: Fail
//
// A file that cannot be used as a whole (not YAML, wrong shape) is a FileError: the caller
// keeps the last good rules. A bad rule is reported by name and the others are used.
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { checkFieldSelector } from '../../kube/fields.ts';
import { StatusError } from '../../kube/status.ts';
import type { AggregateFunction, JsonRequirement } from '../../storage/aggregate.ts';
import { combine, emptySelection, parseSelection, withFieldSelector, type Selection } from './selector.ts';

export type NotReadyPolicy = 'ServeLastKnown' | 'Fail';
export const notReadyPolicies: NotReadyPolicy[] = ['ServeLastKnown', 'Fail'];
export const aggregateFunctions: AggregateFunction[] = ['count', 'sum', 'min', 'max', 'avg'];

export interface MetricRule {
  name: string;
  /** The resource read: its API group ('' for core) and plural name. */
  group: string;
  resource: string;
  selection: Selection;
  match: JsonRequirement[];
  aggregate: AggregateFunction;
  /** sum, min, max, avg: the JSON path of the number, as keys and as written. */
  path?: string[];
  pathText?: string;
  perCluster: boolean;
  whenClusterNotReady: NotReadyPolicy;
}

export interface RuleSet {
  rules: Map<string, MetricRule>;
  /** Rules that cannot be used, by name: why. */
  invalid: Map<string, string>;
  /** Every problem, for logs (rules without a usable name too). */
  problems: string[];
  defaults: { whenClusterNotReady: NotReadyPolicy };
}

export const emptyRuleSet = (): RuleSet => ({ rules: new Map(), invalid: new Map(), problems: [], defaults: { whenClusterNotReady: 'ServeLastKnown' } });

/** The file cannot be used at all. */
export class FileError extends Error {
  override name = 'FileError';
}

class RuleError extends Error {
  override name = 'RuleError';
}

/** Metric names: lowercase letters, digits, '-', '_' and '.', starting and ending with a letter or digit (they are URL path segments and RBAC resource names). */
export const metricNameRe = /^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$/;
const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** `<resource>` (core group) or `<resource>.<group>`: the count metric name of a resource, and a rule's `resource`. */
export function parseResourceName(text: string): { group: string; resource: string } | undefined {
  const dot = text.indexOf('.');
  const resource = dot < 0 ? text : text.slice(0, dot);
  const group = dot < 0 ? '' : text.slice(dot + 1);
  if (!dnsLabel.test(resource) || (dot >= 0 && (group.length > 253 || !group.split('.').every((p) => dnsLabel.test(p))))) return undefined;
  return { group, resource };
}

export const resourceMetricName = (group: string, resource: string): string => (group ? `${resource}.${group}` : resource);

/**
 * A JSON path as keys: `.status.readyReplicas`, `status.readyReplicas`, and bracketed keys for
 * names with dots or slashes: `.metadata.annotations['example.com/tier']`. No array indexes.
 */
export function parseJsonPath(text: string): string[] {
  const keys: string[] = [];
  let i = 0;
  const s = text.trim();
  if (s === '') throw new RuleError('empty JSON path');
  if (s[0] !== '.' && s[0] !== '[') i = -1; // `status.x` reads as `.status.x`
  while (i < s.length) {
    if (i === -1 || s[i] === '.') {
      const start = i + 1;
      let j = start;
      while (j < s.length && s[j] !== '.' && s[j] !== '[') j++;
      const key = s.slice(start, j);
      if (!/^[A-Za-z0-9_$/-]+$/.test(key)) throw new RuleError(`JSON path ${JSON.stringify(text)}: ${key === '' ? 'empty key' : `key ${JSON.stringify(key)} needs brackets: ['${key}']`}`);
      keys.push(key);
      i = j;
    } else if (s[i] === '[') {
      const m = /^\[(['"])([^'"\\]+)\1\]/.exec(s.slice(i));
      if (!m) throw new RuleError(`JSON path ${JSON.stringify(text)}: expected ['key'] at ${JSON.stringify(s.slice(i))} (array indexes are not supported)`);
      keys.push(m[2]);
      i += m[0].length;
    } else throw new RuleError(`JSON path ${JSON.stringify(text)}: unexpected ${JSON.stringify(s[i])}`);
  }
  return keys;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function str(v: unknown, what: string): string {
  if (typeof v !== 'string' || v.trim() === '') throw new RuleError(`${what} must be a non-empty string`);
  return v.trim();
}

function policy(v: unknown, what: string): NotReadyPolicy {
  if (typeof v !== 'string' || !notReadyPolicies.includes(v as NotReadyPolicy)) throw new RuleError(`${what} must be ${notReadyPolicies.join(' or ')}, got ${JSON.stringify(v)}`);
  return v as NotReadyPolicy;
}

/** A selector string of a rule: StatusErrors (bad selector) become rule errors. */
function selection(f: () => Selection): Selection {
  try {
    return f();
  } catch (err) {
    if (err instanceof StatusError) throw new RuleError(err.message);
    throw err;
  }
}

const matchOperators = ['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'] as const;

function parseMatch(v: unknown, index: number): JsonRequirement {
  const where = `match[${index}]`;
  if (!isRecord(v)) throw new RuleError(`${where} must be a map with path, operator and values`);
  for (const k of Object.keys(v)) if (!['path', 'operator', 'values'].includes(k)) throw new RuleError(`${where}: unknown key ${JSON.stringify(k)} (use path, operator, values)`);
  const path = parseJsonPath(str(v.path, `${where}.path`));
  const operator = v.operator;
  if (typeof operator !== 'string' || !(matchOperators as readonly string[]).includes(operator)) throw new RuleError(`${where}.operator must be one of ${matchOperators.join(', ')}, got ${JSON.stringify(operator)}`);
  const op = operator as JsonRequirement['operator'];
  const raw = v.values === undefined || v.values === null ? [] : v.values;
  if (!Array.isArray(raw) || !raw.every((x) => ['string', 'number', 'boolean'].includes(typeof x))) throw new RuleError(`${where}.values must be a list of strings or numbers`);
  const values = raw.map((x) => String(x));
  if ((op === 'In' || op === 'NotIn') && values.length === 0) throw new RuleError(`${where}: ${op} needs values`);
  if ((op === 'Exists' || op === 'DoesNotExist') && values.length > 0) throw new RuleError(`${where}: ${op} takes no values`);
  if ((op === 'Gt' || op === 'Lt') && (values.length !== 1 || !Number.isFinite(Number(values[0])) || values[0].trim() === '')) throw new RuleError(`${where}: ${op} needs exactly one number`);
  return { path, operator: op, values };
}

const ruleKeys = ['name', 'resource', 'namespaces', 'labelSelector', 'fieldSelector', 'match', 'aggregate', 'path', 'perCluster', 'whenClusterNotReady'];

function parseRule(raw: Record<string, unknown>, defaults: RuleSet['defaults']): MetricRule {
  for (const k of Object.keys(raw)) if (!ruleKeys.includes(k)) throw new RuleError(`unknown key ${JSON.stringify(k)} (use ${ruleKeys.join(', ')})`);
  const name = str(raw.name, 'name');
  if (name.length > 253 || !metricNameRe.test(name)) throw new RuleError(`name ${JSON.stringify(name)} must be lowercase letters, digits, '-', '_' or '.', starting and ending with a letter or digit, at most 253 characters`);
  const target = parseResourceName(str(raw.resource, 'resource'));
  if (!target) throw new RuleError(`resource ${JSON.stringify(raw.resource)} must be <resource> (core group) or <resource>.<group>, e.g. pods, jobs.batch, widgets.example.com`);

  let sel = raw.labelSelector === undefined || raw.labelSelector === null ? emptySelection() : selection(() => parseSelection(str(raw.labelSelector, 'labelSelector'), 'labelSelector'));
  if (raw.fieldSelector !== undefined && raw.fieldSelector !== null) {
    const fs = str(raw.fieldSelector, 'fieldSelector');
    sel = selection(() => withFieldSelector(sel, fs));
  }
  selection(() => {
    checkFieldSelector(target.group, target.resource, sel.fields);
    return sel;
  });
  if (raw.namespaces !== undefined && raw.namespaces !== null) {
    if (sel.allNamespaces || sel.namespaces.in) throw new RuleError('give the namespaces either with namespaces or in labelSelector, not both');
    const scope = emptySelection();
    if (raw.namespaces === 'all') scope.allNamespaces = true;
    else if (Array.isArray(raw.namespaces) && raw.namespaces.length > 0 && raw.namespaces.every((n) => typeof n === 'string' && dnsLabel.test(n) && n.length <= 63)) scope.namespaces.in = [...new Set(raw.namespaces as string[])];
    else throw new RuleError(`namespaces must be "all" or a list of namespace names, got ${JSON.stringify(raw.namespaces)}`);
    sel = combine(sel, scope);
  }

  const matchRaw = raw.match === undefined || raw.match === null ? [] : raw.match;
  if (!Array.isArray(matchRaw)) throw new RuleError('match must be a list of {path, operator, values}');
  const match = matchRaw.map(parseMatch);

  const aggregate = (raw.aggregate ?? 'count') as AggregateFunction;
  if (!aggregateFunctions.includes(aggregate)) throw new RuleError(`aggregate must be one of ${aggregateFunctions.join(', ')}, got ${JSON.stringify(raw.aggregate)}`);
  const rule: MetricRule = { name, ...target, selection: sel, match, aggregate, perCluster: false, whenClusterNotReady: defaults.whenClusterNotReady };
  if (aggregate === 'count') {
    if (raw.path !== undefined && raw.path !== null) throw new RuleError('count takes no path (sum, min, max and avg do)');
  } else {
    rule.pathText = str(raw.path, `path (the number to ${aggregate})`);
    rule.path = parseJsonPath(rule.pathText);
  }
  if (raw.perCluster !== undefined && raw.perCluster !== null) {
    if (typeof raw.perCluster !== 'boolean') throw new RuleError('perCluster must be true or false');
    rule.perCluster = raw.perCluster;
  }
  if (raw.whenClusterNotReady !== undefined && raw.whenClusterNotReady !== null) rule.whenClusterNotReady = policy(raw.whenClusterNotReady, 'whenClusterNotReady');
  return rule;
}

/** Parses the metrics file's text. Throws a FileError when the file as a whole cannot be used. */
export function parseRules(text: string): RuleSet {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    const where = err instanceof YAMLParseError && err.linePos ? ` at line ${err.linePos[0].line}` : '';
    throw new FileError(`not valid YAML${where}: ${(err as Error).message.split('\n')[0]}`);
  }
  const set = emptyRuleSet();
  if (doc === null || doc === undefined) return set;
  if (!isRecord(doc)) throw new FileError('expected a map with a metrics list (and optionally defaults)');
  for (const k of Object.keys(doc)) if (!['apiVersion', 'kind', 'defaults', 'metrics'].includes(k)) throw new FileError(`unknown top-level key ${JSON.stringify(k)} (expected metrics, defaults)`);
  if (doc.defaults !== undefined && doc.defaults !== null) {
    if (!isRecord(doc.defaults)) throw new FileError('defaults must be a map (whenClusterNotReady)');
    for (const k of Object.keys(doc.defaults)) if (k !== 'whenClusterNotReady') throw new FileError(`defaults: unknown key ${JSON.stringify(k)} (expected whenClusterNotReady)`);
    if (doc.defaults.whenClusterNotReady !== undefined) {
      try {
        set.defaults.whenClusterNotReady = policy(doc.defaults.whenClusterNotReady, 'defaults.whenClusterNotReady');
      } catch (err) {
        throw new FileError((err as Error).message);
      }
    }
  }
  const list = doc.metrics ?? [];
  if (!Array.isArray(list)) throw new FileError('metrics must be a list');
  list.forEach((raw: unknown, index) => {
    const name = isRecord(raw) && typeof raw.name === 'string' && metricNameRe.test(raw.name.trim()) ? raw.name.trim() : undefined;
    const fail = (message: string) => {
      const text = `metrics[${index}]${name ? ` (${name})` : ''}: ${message}`;
      set.problems.push(text);
      if (name && !set.rules.has(name)) set.invalid.set(name, text);
    };
    if (!isRecord(raw)) return fail('must be a map');
    if (name && (set.rules.has(name) || set.invalid.has(name))) {
      set.problems.push(`metrics[${index}] (${name}): duplicate name (the first rule of that name is used)`);
      return;
    }
    try {
      const rule = parseRule(raw, set.defaults);
      set.rules.set(rule.name, rule);
    } catch (err) {
      if (!(err instanceof RuleError)) throw err;
      fail(err.message);
    }
  });
  return set;
}
