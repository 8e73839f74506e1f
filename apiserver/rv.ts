// Where a read goes and how fresh it must be: kube-apiserver's resourceVersion rules, over
// the primary alone or over standbys (storage/read-pool.ts).
//
// - resourceVersion unset (most recent): the answer has every change committed before the
//   request arrived. On a standby: the primary's watermark (read after the request arrived),
//   then the standby's snapshot once it has it; a standby that does not get there within the
//   wait (3 s) is given up for the primary, as kube-apiserver gives up its watch cache for
//   etcd (KEP-2340, "Consistent Reads from Cache": the cache waits for the revision etcd
//   reported, and serves from etcd when it does not catch up in time; the fallback was kept
//   in kubernetes/enhancements#5345). With the primary down, the standby's state is served
//   with a Warning.
// - resourceVersion=0: any state: the standby's as it is, no wait.
// - resourceVersion=N (NotOlderThan, Exact), a continue token (its first page's rv): a
//   snapshot that has N, waited for 3 s (the cacher's waitUntilFreshAndBlock), then kube's
//   504: `Too large resource version: N, current: C` with the ResourceVersionTooLarge cause
//   (storage/errors.ts). The check is made in the snapshot that is read, so a later page never
//   comes from a snapshot older than its first page's, whichever standby serves it.
import { warningValue } from './warnings.ts';
import { RvTooLargeError } from '../storage/errors.ts';
import { isDatabaseFailure, ReadPool } from '../storage/read-pool.ts';
import type { Store } from '../storage/store.ts';
import type { Deps } from './deps.ts';

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

/**
 * Runs `read(store, minRv)` on the database and with the rv floor that kube's rules give
 * `p` (see the head of this file). `read` must throw RvTooLargeError when its snapshot is
 * below minRv (ListQuery.minRv, Store.get's minRv do).
 */
export async function readFresh<T>(deps: Pick<Deps, 'reads' | 'limits'>, p: RvParams, read: (store: Store, minRv: number | undefined) => Promise<T>): Promise<FreshRead<T>> {
  const pool = deps.reads;
  const deadline = Date.now() + deps.limits.tooLargeWaitMs;
  const first = !p.continue;
  const atLeast = first && p.resourceVersion !== '' && p.resourceVersion !== '0' ? Number(p.resourceVersion) : undefined;
  if (!pool.hasStandbys) return { value: await ReadPool.untilFresh(() => read(pool.primary, atLeast), deadline), warnings: [] };

  const warnings: string[] = [];
  const arrived = Date.now();
  const { value } = await pool.withReader(async (r) => {
    if (!first || atLeast !== undefined) return ReadPool.untilFresh(() => read(r.store, atLeast), deadline);
    if (p.resourceVersion === '0' || r.authoritative) return read(r.store, undefined);
    let target: number;
    try {
      target = await pool.primaryWatermark(arrived);
    } catch (err) {
      if (!isDatabaseFailure(err)) throw err;
      warnings.push(primaryDownWarning);
      return read(r.store, undefined);
    }
    try {
      return await ReadPool.untilFresh(() => read(r.store, target), deadline);
    } catch (err) {
      if (!(err instanceof RvTooLargeError)) throw err;
    }
    pool.fallbacks++;
    try {
      return await read(pool.primary, undefined);
    } catch (err) {
      if (!isDatabaseFailure(err)) throw err;
      pool.markDown(pool.primary, err);
      warnings.push(primaryDownWarning);
      return read(r.store, undefined);
    }
  });
  return { value, warnings };
}
