// Label selectors as kube-apiserver parses them (k8s.io/apimachinery/pkg/labels):
// `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x,y)`, `a`, `!a`, `a>1`, `a<1`,
// requirements joined by commas. `!=` and `notin` also match objects without the key.
import { StatusError } from './status.ts';

export type Operator = 'in' | 'notin' | 'exists' | '!' | 'gt' | 'lt';

/** One requirement. `=`/`==` parse to `in` with one value, `!=` to `notin` with one value. */
export interface Requirement {
  key: string;
  operator: Operator;
  values: string[];
}

export type LabelSelector = Requirement[];

const int64Min = -(2n ** 63n);
const int64Max = 2n ** 63n - 1n;

/**
 * A label value as Go's strconv.ParseInt(v, 10, 64): an optional sign, then base-10 digits
 * only, within int64; undefined otherwise. The one definition of which values `a>N` / `a<N`
 * compare: storage indexes it (object_labels.num) and the in-memory matcher uses it.
 */
export function parseInt64(v: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(v)) return undefined;
  const n = BigInt(v);
  return n < int64Min || n > int64Max ? undefined : n;
}

/** A malformed selector: served as 400 BadRequest. */
export class SelectorError extends StatusError {
  override name = 'SelectorError';
  constructor(message: string) {
    super('BadRequest', message);
  }
}

const nameRe = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const dnsLabelRe = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Returns why `key` is not a valid label key (qualified name), or undefined. */
export function invalidLabelKey(key: string): string | undefined {
  const slash = key.indexOf('/');
  let name = key;
  if (slash >= 0) {
    const prefix = key.slice(0, slash);
    name = key.slice(slash + 1);
    if (prefix.length === 0 || prefix.length > 253 || !prefix.split('.').every((p) => dnsLabelRe.test(p))) {
      return `prefix part of ${JSON.stringify(key)} must be a DNS subdomain`;
    }
  }
  if (name.length === 0 || name.length > 63 || !nameRe.test(name)) {
    return `name part of ${JSON.stringify(key)} must be 63 characters or less, consist of alphanumerics, '-', '_' or '.', and start and end with an alphanumeric`;
  }
  return undefined;
}

/** Returns why `value` is not a valid label value, or undefined. */
export function invalidLabelValue(value: string): string | undefined {
  if (value === '') return undefined;
  if (value.length > 63 || !nameRe.test(value)) {
    return `label value ${JSON.stringify(value)} must be 63 characters or less, consist of alphanumerics, '-', '_' or '.', and start and end with an alphanumeric`;
  }
  return undefined;
}

type Token =
  | { kind: 'id'; text: string }
  | { kind: 'op'; text: '=' | '==' | '!=' | '!' | '>' | '<' | '(' | ')' | ',' }
  | { kind: 'end' };

const specials = new Set([' ', '\t', '\n', ',', '=', '!', '(', ')', '<', '>']);

function lex(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i];
    if (c === ' ' || c === '\t' || c === '\n') {
      i++;
    } else if (c === '=' || c === '!') {
      if (input[i + 1] === '=') {
        tokens.push({ kind: 'op', text: c === '=' ? '==' : '!=' });
        i += 2;
      } else {
        tokens.push({ kind: 'op', text: c });
        i++;
      }
    } else if (c === '(' || c === ')' || c === ',' || c === '<' || c === '>') {
      tokens.push({ kind: 'op', text: c });
      i++;
    } else {
      let j = i;
      while (j < input.length && !specials.has(input[j])) j++;
      tokens.push({ kind: 'id', text: input.slice(i, j) });
      i = j;
    }
  }
  tokens.push({ kind: 'end' });
  return tokens;
}

/** Parses a label selector string. The empty string selects everything. */
export function parseLabelSelector(input: string): LabelSelector {
  const tokens = lex(input);
  let pos = 0;
  const peek = () => tokens[pos];
  const next = () => tokens[pos++];
  const fail = (msg: string): never => {
    throw new SelectorError(`unable to parse requirement: ${msg} in label selector ${JSON.stringify(input)}`);
  };
  const checkKey = (key: string) => {
    const why = invalidLabelKey(key);
    if (why) fail(why);
  };
  const checkValue = (value: string) => {
    const why = invalidLabelValue(value);
    if (why) fail(why);
  };

  const selector: LabelSelector = [];
  if (peek().kind === 'end') return selector;
  for (;;) {
    let t = next();
    if (t.kind === 'op' && t.text === '!') {
      const k = next();
      if (k.kind !== 'id') fail('expected a key after "!"');
      const key = (k as { text: string }).text;
      checkKey(key);
      selector.push({ key, operator: '!', values: [] });
    } else if (t.kind === 'id') {
      const key = t.text;
      checkKey(key);
      const op = peek();
      if (op.kind === 'end' || (op.kind === 'op' && op.text === ',')) {
        selector.push({ key, operator: 'exists', values: [] });
      } else if (op.kind === 'id' && (op.text === 'in' || op.text === 'notin')) {
        next();
        const open = next();
        if (!(open.kind === 'op' && open.text === '(')) fail(`expected "(" after "${op.text}"`);
        const values: string[] = [];
        for (;;) {
          const v = next();
          // `()` is the set of the empty value, as apimachinery's parseValues has it.
          if (v.kind === 'op' && v.text === ')' && values.length === 0) {
            values.push('');
            break;
          }
          if (v.kind === 'id') {
            checkValue(v.text);
            values.push(v.text);
          } else if (v.kind === 'op' && (v.text === ',' || v.text === ')')) {
            // An empty value between commas, as in `in (a,,b)` or `in (a,)`.
            values.push('');
            pos--;
          } else {
            fail('expected a value');
          }
          const sep = next();
          if (sep.kind === 'op' && sep.text === ')') break;
          if (!(sep.kind === 'op' && sep.text === ',')) fail('expected "," or ")" in value set');
        }
        selector.push({ key, operator: op.text, values: [...new Set(values)] });
      } else if (op.kind === 'op' && (op.text === '=' || op.text === '==' || op.text === '!=' || op.text === '>' || op.text === '<')) {
        next();
        const v = peek();
        let value = '';
        if (v.kind === 'id') {
          value = v.text;
          next();
        } else if (!(v.kind === 'end' || (v.kind === 'op' && v.text === ','))) {
          fail(`expected a value after "${op.text}"`);
        }
        if (op.text === '>' || op.text === '<') {
          if (parseInt64(value) === undefined) fail(`for 'Gt', 'Lt' operators, the value must be an integer, got ${JSON.stringify(value)}`);
          selector.push({ key, operator: op.text === '>' ? 'gt' : 'lt', values: [value] });
        } else {
          checkValue(value);
          selector.push({ key, operator: op.text === '!=' ? 'notin' : 'in', values: [value] });
        }
      } else {
        fail(`unexpected ${op.kind === 'id' ? JSON.stringify(op.text) : op.kind === 'op' ? `"${op.text}"` : 'end'} after key ${JSON.stringify(key)}`);
      }
    } else {
      fail(t.kind === 'end' ? 'unexpected end' : `unexpected "${(t as { text: string }).text}"`);
    }
    t = next();
    if (t.kind === 'end') break;
    if (!(t.kind === 'op' && t.text === ',')) fail(`expected "," between requirements, got ${t.kind === 'op' ? `"${t.text}"` : JSON.stringify(t.text)}`);
    if (peek().kind === 'end') fail('trailing ","');
  }
  return selector;
}

/** Whether one requirement holds for a label set. */
export function requirementMatches(r: Requirement, labels: Readonly<Record<string, string>> | undefined): boolean {
  const has = labels !== undefined && Object.prototype.hasOwnProperty.call(labels, r.key);
  const value = has ? labels![r.key] : undefined;
  switch (r.operator) {
    case 'in':
      return has && r.values.includes(value!);
    case 'notin':
      return !has || !r.values.includes(value!);
    case 'exists':
      return has;
    case '!':
      return !has;
    case 'gt':
    case 'lt': {
      const n = has ? parseInt64(value!) : undefined;
      const bound = parseInt64(r.values[0]);
      if (n === undefined || bound === undefined) return false;
      return r.operator === 'gt' ? n > bound : n < bound;
    }
  }
}

/** Whether every requirement holds for a label set. */
export function matchesLabels(selector: LabelSelector, labels: Readonly<Record<string, string>> | undefined): boolean {
  return selector.every((r) => requirementMatches(r, labels));
}

/** Renders a selector back to its canonical string form. */
export function formatLabelSelector(selector: LabelSelector): string {
  return selector
    .map((r) => {
      switch (r.operator) {
        case 'in':
          return r.values.length === 1 ? `${r.key}=${r.values[0]}` : `${r.key} in (${r.values.join(',')})`;
        case 'notin':
          return r.values.length === 1 ? `${r.key}!=${r.values[0]}` : `${r.key} notin (${r.values.join(',')})`;
        case 'exists':
          return r.key;
        case '!':
          return `!${r.key}`;
        case 'gt':
          return `${r.key}>${r.values[0]}`;
        case 'lt':
          return `${r.key}<${r.values[0]}`;
      }
    })
    .join(',');
}
