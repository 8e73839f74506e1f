// Why a member leaves when its heartbeat is overdue, as measured: the process itself did not
// run (its event loop blocked, as under SIGSTOP or a frozen node: storage was fine), the
// heartbeat write failed, or the write sent is still unanswered.
import t, { type Test } from 'tap';
import type { Logger } from '../../lib/log.ts';
import type { Store } from '../../storage/store.ts';
import { openTestStore } from '../../storage/testing.ts';
import { defaultShardSettings, Membership } from './membership.ts';
import { SynchroMetrics } from '../metrics/metrics.ts';
import { waitUntil } from '../testutil.ts';

const TTL_MS = 1000;

function capture(): { log: Logger; left: () => string | undefined } {
  const lines: Array<{ msg: string; fields: Record<string, unknown> }> = [];
  const log: Logger = {
    debug: () => undefined,
    info: (msg, fields = {}) => void lines.push({ msg, fields }),
    warn: (msg, fields = {}) => void lines.push({ msg, fields }),
    error: (msg, fields = {}) => void lines.push({ msg, fields }),
    child: () => log,
  };
  return { log, left: () => lines.find((l) => l.msg.startsWith('left the synchro members'))?.fields.reason as string | undefined };
}

/** `store` with its heartbeat replaced once `broken.on` is set. */
function breakable(store: Store, heartbeat: Store['heartbeat']): { store: Store; broken: { on: boolean } } {
  const broken = { on: false };
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'heartbeat' && broken.on) return heartbeat;
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store: wrapped, broken };
}

async function member(t: Test, store: Store, log: Logger): Promise<Membership> {
  const m = new Membership(store, defaultShardSettings({ identity: 'one', leaseTtlMs: TTL_MS }), new SynchroMetrics(), log, () => undefined);
  m.start();
  t.teardown(() => m.stop());
  await m.join(true);
  t.ok(m.isMember, 'a member');
  return m;
}

t.test('a process that did not run says so, not that storage is unreachable', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  const { log, left } = capture();
  const m = await member(t, store, log);
  // The event loop blocked for longer than the TTL: nothing of this process runs, as under SIGSTOP.
  const until = performance.now() + 2.5 * TTL_MS;
  while (performance.now() < until) {
    /* blocked */
  }
  const reason = await waitUntil('left the members', left, 10_000);
  t.match(reason, /^the process did not run for \d+\.\d s \(paused\?/);
  t.notMatch(reason, /storage unreachable/);
  // Storage was fine all along: the next heartbeat makes it a member again.
  await waitUntil('a member again', () => m.isMember, 10_000);
});

t.test('a failing heartbeat write says storage is unreachable and why', async (t) => {
  const { store: real, close } = await openTestStore('sqlite');
  t.teardown(close);
  const { store, broken } = breakable(real, async () => {
    throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
  });
  const { log, left } = capture();
  await member(t, store, log);
  broken.on = true;
  const reason = await waitUntil('left the members', left, 10_000);
  t.match(reason, /^storage unreachable: no heartbeat written for \d+\.\d s; the last attempt failed: connect ECONNREFUSED 127\.0\.0\.1:5432$/);
});

t.test('an unanswered heartbeat write says storage is too slow', async (t) => {
  const { store: real, close } = await openTestStore('sqlite');
  t.teardown(close);
  let release: (() => void) | undefined;
  const { store, broken } = breakable(real, (...args) => new Promise<void>((r) => (release = r)).then(() => real.heartbeat(...args)));
  const { log, left } = capture();
  await member(t, store, log);
  broken.on = true;
  const reason = await waitUntil('left the members', left, 10_000);
  t.match(reason, /^storage too slow: no heartbeat written for \d+\.\d s; the one sent \d+\.\d s ago is still unanswered$/);
  release?.();
});
