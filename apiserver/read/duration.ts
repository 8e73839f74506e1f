// Go durations in query parameters (`timeout=32s`, `createdSince=1h`), as kube-apiserver parses them.
import { badRequest } from '../../kube/status.ts';

/** A Go duration such as `32s`, `1m0s`, `500ms` → ms. */
export function parseGoDuration(name: string, v: string): number {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, 'µs': 0.001, ns: 0.000001 };
  const re = /(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/gy;
  let total = 0;
  let pos = 0;
  let m: RegExpExecArray | null;
  if (v === '' || v.length > 64) throw badRequest(`invalid ${name} ${JSON.stringify(v)}: not a duration`);
  while ((m = re.exec(v))) {
    total += Number(m[1]) * units[m[2]];
    pos = re.lastIndex;
  }
  if (pos !== v.length) {
    if (/^\d+$/.test(v)) return Number(v) * 1000;
    throw badRequest(`invalid ${name} ${JSON.stringify(v)}: not a duration (e.g. 30s, 1m0s)`);
  }
  return total;
}
