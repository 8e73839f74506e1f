// JSON text of objects nested deeper than V8's JSON.stringify can recurse. kube-apiserver
// decodes JSON up to 10,000 levels deep (Go's encoding/json, which sigs.k8s.io/json forks:
// scanner.go `maxNestingDepth = 10000`), so a member can hold such an object; V8's
// JSON.stringify throws RangeError past about 4,000 levels (JSON.parse has no such limit).
// stringifyJson writes the same text as JSON.stringify for JSON data (what JSON.parse made),
// with an explicit stack instead of recursion when it has to.

export interface JsonTextOptions {
  /** Maps every string, keys included (default: as is). */
  mapString?: (s: string) => string;
  /** Containers deeper than this (the root is depth 1) are written as null (default: none). */
  maxDepth?: number;
}

/** JSON.stringify(value) for JSON data, at any depth. */
export function stringifyJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    return writeJson(value);
  }
}

const isContainer = (v: unknown): v is Record<string, unknown> | unknown[] => typeof v === 'object' && v !== null;

/** The JSON text of `value`, iteratively, with the options' mapping and depth cut. */
export function writeJson(value: unknown, opts: JsonTextOptions = {}): string {
  const str = (s: string) => JSON.stringify(opts.mapString ? opts.mapString(s) : s);
  const maxDepth = opts.maxDepth ?? Infinity;
  const scalar = (v: unknown): string | undefined => {
    if (typeof v === 'string') return str(v);
    if (typeof v === 'number' || typeof v === 'boolean' || v === null) return JSON.stringify(v);
    return undefined; // undefined, functions, symbols: left out (in arrays: null)
  };
  const out: string[] = [];
  // A frame per open container: its entries and how far they are written.
  type Frame = { array: boolean; keys: string[] | null; items: unknown[] | Record<string, unknown>; i: number; wrote: boolean };
  const stack: Frame[] = [];
  const open = (v: Record<string, unknown> | unknown[]) => {
    if (stack.length + 1 > maxDepth) {
      out.push('null');
      return;
    }
    const array = Array.isArray(v);
    out.push(array ? '[' : '{');
    stack.push({ array, keys: array ? null : Object.keys(v), items: v, i: 0, wrote: false });
  };
  if (isContainer(value)) open(value);
  else return scalar(value) ?? 'null';
  while (stack.length > 0) {
    const f = stack[stack.length - 1];
    const n = f.array ? (f.items as unknown[]).length : f.keys!.length;
    if (f.i >= n) {
      out.push(f.array ? ']' : '}');
      stack.pop();
      continue;
    }
    const key = f.array ? undefined : f.keys![f.i];
    const v = f.array ? (f.items as unknown[])[f.i] : (f.items as Record<string, unknown>)[key!];
    f.i++;
    const text = isContainer(v) ? undefined : scalar(v);
    if (!isContainer(v) && text === undefined && !f.array) continue;
    if (f.wrote) out.push(',');
    f.wrote = true;
    if (!f.array) out.push(str(key!), ':');
    if (isContainer(v)) open(v);
    else out.push(text ?? 'null');
  }
  return out.join('');
}

/** How deep `value` nests (a scalar is 0, `{}` is 1), counting no further than `limit`. */
export function jsonDepth(value: unknown, limit = Infinity): number {
  if (!isContainer(value)) return 0;
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (d > max) max = d;
    if (max > limit) return max;
    for (const c of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) if (isContainer(c)) stack.push([c, d + 1]);
  }
  return max;
}
