// How fresh a list, get or external metric must be: kube-apiserver's resourceVersion rules,
// mapped to the pool's one consistent-read path (storage/read-pool.ts `read`, which the watch's
// start uses too: apiserver/watch/hub.ts), over the primary alone or over standbys.
//
// - resourceVersion unset (most recent): the answer has every change committed before the
//   request arrived. On a standby: the primary's watermark (read after the request arrived),
//   then the standby's snapshot once it has it; a standby that does not get there within the
//   wait (3 s) is given up for the primary, as kube-apiserver gives up its watch cache for
//   etcd (KEP-2340, "Consistent Reads from Cache": the cache waits for the revision etcd
//   reported, and serves from etcd when it does not catch up in time; the fallback was kept
//   in kubernetes/enhancements#5345). With the primary down, the state of the database read
//   is served with a Warning.
// - resourceVersion=0: any state: the standby's as it is, no wait.
// - resourceVersion=N (NotOlderThan, Exact), a continue token (its first page's rv): a
//   snapshot that has N, waited for 3 s (the cacher's waitUntilFreshAndBlock), then kube's
//   504: `Too large resource version: N, current: C` with the ResourceVersionTooLarge cause
//   (storage/errors.ts). The check is made in the snapshot that is read, so a later page never
//   comes from a snapshot older than its first page's, whichever standby serves it.
import { warningValue } from '../endpoints/warnings.ts';
import type { FreshReader, Freshness, ReadPool } from '../../storage/read-pool.ts';
import type { Deps } from '../endpoints/deps.ts';

export interface FreshRead<T> {
  value: T;
  /** Warning header values (the primary did not answer: the state served may miss changes). */
  warnings: string[];
}

/** The resourceVersion and continue parameters of a list or get. */
export interface RvParams {
  resourceVersion: string;
  continue?: string;
}

export const primaryDownWarning = warningValue(
  'the primary database did not answer: this answer is a standby database\'s state and may miss the most recent changes',
);

/** What a list or get with these parameters must reflect (kube's rules, the head of this file). */
export function freshnessOf(p: RvParams, since: number): Freshness {
  if (p.continue) return { kind: 'not-older-than', rv: undefined };
  if (p.resourceVersion === '') return { kind: 'most-recent', since };
  if (p.resourceVersion === '0') return { kind: 'any' };
  return { kind: 'not-older-than', rv: Number(p.resourceVersion) };
}

/** A warning for a read that the primary did not confirm, or none. */
export function unconfirmedWarnings(read: { unconfirmed: boolean }): string[] {
  return read.unconfirmed ? [primaryDownWarning] : [];
}

/**
 * Runs `read(store, minRv)` through the pool's one consistent-read path (storage/read-pool.ts
 * `read`) with what kube's rules give `p`. `read` must throw RvTooLargeError when its
 * snapshot is below minRv (ListQuery.minRv, Store.get's minRv do).
 */
export async function readFresh<T>(deps: { reads: ReadPool; limits: Pick<Deps['limits'], 'tooLargeWaitMs'> }, p: RvParams, read: FreshReader<T>): Promise<FreshRead<T>> {
  const r = await deps.reads.read(freshnessOf(p, performance.now()), read, deps.limits.tooLargeWaitMs);
  return { value: r.value, warnings: unconfirmedWarnings(r) };
}
