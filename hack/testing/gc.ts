// Tests of what a module lets go of: how many of some objects the collector can still reach.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * How many of `refs` are still reachable after a full collection. Awaits a turn of the event
 * loop first: an object a WeakRef was made of in the current turn is kept until it ends.
 */
export async function stillReachable(refs: Array<WeakRef<object>>): Promise<number> {
  await new Promise((r) => setImmediate(r));
  // V8's gc() for this process, without starting it with --expose-gc.
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return refs.filter((r) => r.deref() !== undefined).length;
}
