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

/** How far above an even share a member's load may go (the `c` of bounded-load consistent hashing). */
export const defaultBalanceEpsilon = 0.25;

/**
 * How many of `keys` keys one of `members` members may own: the even share rounded up, or
 * (1 + epsilon) times it rounded down where that is more. Never above ceil(keys / members ×
 * (1 + epsilon)); with fewer keys than members / epsilon it is the even share itself, so a
 * few keys are spread as evenly as they can be (2 over 2 members: one each).
 */
export function capacity(keys: number, members: number, epsilon = defaultBalanceEpsilon): number {
  if (members === 0) return 0;
  return Math.max(Math.ceil(keys / members), Math.floor((keys / members) * (1 + epsilon)));
}

/**
 * Bounded-load rendezvous: the owner of each of `keys` among `members`, none owning more than
 * capacity(). Every (key, member) pair is taken in order of its weight, highest first (ties
 * to the smaller member, then the smaller key), and a key goes to the first member it meets
 * that still has room: the one stable assignment of these weights, the same in every process
 * given the same keys and members, whatever their order. Where no member is full it is
 * ownerOf() for every key; a member joining or leaving moves the keys it wins or held, and
 * beyond those only keys pushed out of a member that a changed capacity fills (each to its
 * next-best member with room).
 */
export function assignment(keys: Iterable<string>, members: Iterable<string>, epsilon = defaultBalanceEpsilon): Map<string, string> {
  const ks = [...new Set(keys)];
  const ms = [...new Set(members)];
  const owners = new Map<string, string>();
  if (ms.length === 0 || ks.length === 0) return owners;
  const cap = capacity(ks.length, ms.length, epsilon);
  const pairs: Array<{ key: string; member: string; w: bigint }> = [];
  for (const key of ks) for (const member of ms) pairs.push({ key, member, w: weight(member, key) });
  pairs.sort((a, b) => (a.w !== b.w ? (a.w > b.w ? -1 : 1) : a.member !== b.member ? (a.member < b.member ? -1 : 1) : a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const load = new Map(ms.map((m) => [m, 0]));
  for (const { key, member } of pairs) {
    if (owners.has(key) || load.get(member)! >= cap) continue;
    owners.set(key, member);
    load.set(member, load.get(member)! + 1);
    if (owners.size === ks.length) break;
  }
  return owners;
}
