// createdSince / createdBefore: a creationTimestamp range (storage/created-range.ts). Each is an
// RFC 3339 time (`2026-05-01T10:00:00Z`, an offset, fractions), a date (`2026-05-01`, midnight
// UTC), the same without the colons of the time for label values (`2026-05-01T100000Z`), or a
// duration before now (`2h`, `90m`, `1h30m`). createdSince includes its instant, createdBefore
// excludes it.
import { badRequest } from '../../kube/status.ts';
import { parseGoDuration } from './duration.ts';

const timePattern = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt](\d{2}):?(\d{2}):?(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:?\d{2}))?$/;

/** Times with four-digit years (0001-9999), as RFC 3339 writes them. */
const minTime = Date.parse('0001-01-01T00:00:00Z');
const maxTime = Date.parse('9999-12-31T23:59:59Z') + 1000;

/** A time as the text kube writes creationTimestamp (whole seconds, UTC). */
function kubeTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function parseTime(value: string, source: string): number | undefined {
  const m = timePattern.exec(value);
  if (!m) return undefined;
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0-99 as 1900-1999.
  const check = new Date(0);
  check.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
  check.setUTCHours(Number(h), Number(mi), Number(s), 0);
  const base = check.getTime();
  if (check.getUTCFullYear() !== Number(y) || check.getUTCMonth() !== Number(mo) - 1 || check.getUTCDate() !== Number(d) || check.getUTCHours() !== Number(h) || check.getUTCMinutes() !== Number(mi) || check.getUTCSeconds() !== Number(s)) {
    throw badRequest(`${source}: ${JSON.stringify(value)} is not a valid time`);
  }
  let offset = 0;
  if (zone !== 'Z' && zone !== 'z') {
    const z = /^([+-])(\d{2}):?(\d{2})$/.exec(zone)!;
    offset = (z[1] === '-' ? -1 : 1) * (Number(z[2]) * 60 + Number(z[3])) * 60_000;
  }
  return base - offset + (frac ? Number(`0${frac}`) * 1000 : 0);
}

/**
 * The bound as storage compares it: the first whole second at or after the instant (kube's
 * creationTimestamps are whole seconds, so `>=` and `<` against it are exact).
 */
export function parseCreatedBound(value: string, source: string, now: number): string {
  let ms = parseTime(value, source);
  if (ms === undefined) {
    if (!/^\d/.test(value) || /^\d+$/.test(value)) throw badRequest(`${source}: ${JSON.stringify(value.slice(0, 64))} is neither a time (RFC 3339, e.g. 2026-05-01T10:00:00Z) nor a duration (e.g. 2h, 30m)`);
    ms = now - parseGoDuration(source, value);
  }
  const ceiled = Math.ceil(ms / 1000) * 1000;
  if (!(ceiled >= minTime && ceiled < maxTime)) throw badRequest(`${source}: ${JSON.stringify(value)} is out of range`);
  return kubeTime(ceiled);
}
