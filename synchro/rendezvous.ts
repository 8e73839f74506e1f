// Rendezvous (highest random weight) hashing: every member scores every key, the highest
// score owns it. All members compute the same owner from the same member list, keys spread
// evenly, and when a member comes or goes only the keys it wins or held move.
import { createHash } from 'node:crypto';

/** The weight of `member` for `key`: 64 bits of SHA-256 over both. */
export function weight(member: string, key: string): bigint {
  return createHash('sha256').update(member).update('\u0000').update(key).digest().readBigUInt64BE(0);
}

/** The member that owns `key` (ties, vanishingly rare, go to the smaller id); undefined without members. */
export function ownerOf(key: string, members: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestWeight = -1n;
  for (const m of members) {
    const w = weight(m, key);
    if (w > bestWeight || (w === bestWeight && best !== undefined && m < best)) {
      best = m;
      bestWeight = w;
    }
  }
  return best;
}
