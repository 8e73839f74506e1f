// resourceVersion waits: a list or get asking for an rv newer than the watermark waits a
// little for synchro to get there, then answers 504 ResourceVersionTooLarge.
import { RvTooLargeError } from '../storage/errors.ts';
import type { Store } from '../storage/store.ts';

/** Resolves once the watermark reaches `rv`; throws RvTooLargeError after waitMs. */
export async function waitForRv(store: Store, rv: number, waitMs: number): Promise<number> {
  const deadline = Date.now() + waitMs;
  let current = await store.watermark();
  while (current < rv) {
    if (Date.now() >= deadline) throw new RvTooLargeError(rv, current);
    await new Promise((r) => setTimeout(r, Math.min(50, Math.max(1, deadline - Date.now()))));
    current = await store.watermark();
  }
  return current;
}
