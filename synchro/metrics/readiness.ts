// Whether this synchro process can do its work, as its /readyz says (kube's style: `ok`, or
// `[+]name ok` / `[-]name failed: reason` lines and `readyz check failed`): its configuration
// loaded, storage answering, and it a member of the fleet. /healthz and /livez stay liveness:
// the process runs (restarting it cures none of these).
import { redact } from '../../lib/redact.ts';
import type { MembershipState } from '../membership/membership.ts';
import type { SynchroMetrics } from './metrics.ts';

export interface CheckResult {
  name: string;
  /** Why it fails; undefined when it passes. */
  failure?: string;
  /** What `?verbose` adds after `ok`. */
  detail?: string;
}

export interface ReadinessSources {
  /** The configuration in effect is loaded (a good one was read at least once). */
  loaded(): boolean;
  /** The configuration file's current problem. */
  configError(): string | undefined;
  /** SELECT 1 against storage. */
  ping(): Promise<void>;
  membership(): MembershipState;
  metrics: SynchroMetrics;
  timeoutMs?: number;
}

async function storageFailure(ping: () => Promise<void>, timeoutMs: number): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs);
  });
  try {
    return await Promise.race([ping().then(() => undefined), timeout]);
  } catch (err) {
    return (err as Error).message || String(err);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs every check once and sets panoptes_synchro_ready, _config_error and _membership. */
export async function readiness(s: ReadinessSources): Promise<CheckResult[]> {
  const configError = s.configError();
  const config: CheckResult = !s.loaded()
    ? { name: 'config', failure: configError ?? 'not loaded yet' }
    : { name: 'config', ...(configError ? { detail: `the last good configuration is in effect; the file now fails: ${configError}` } : {}) };
  const storage: CheckResult = { name: 'storage', failure: await storageFailure(s.ping, s.timeoutMs ?? 3000) };
  const m = s.membership();
  const member: CheckResult = m.phase === 'member' ? { name: 'membership', detail: `${m.identity}, one of ${m.live.length} live members` } : { name: 'membership', failure: `not in the membership: ${m.reason || m.phase}` };
  const results = [config, storage, member];
  s.metrics.ready.set(results.every((r) => r.failure === undefined) ? 1 : 0);
  s.metrics.configError.set(configError ? 1 : 0);
  for (const phase of ['out', 'member', 'stopped'] as const) s.metrics.membership.set({ phase }, m.phase === phase ? 1 : 0);
  return results;
}

/** The /readyz answer: 200 `ok` (the lines too with `verbose`), or 503 with every line and why. */
export function readyzAnswer(results: CheckResult[], verbose: boolean): { status: number; body: string } {
  const lines = results.map((r) => (r.failure === undefined ? `[+]${r.name} ok${r.detail ? `: ${r.detail}` : ''}` : `[-]${r.name} failed: ${r.failure}`)).map(redact);
  if (results.some((r) => r.failure !== undefined)) return { status: 503, body: `${lines.join('\n')}\nreadyz check failed\n` };
  return { status: 200, body: verbose ? `${lines.join('\n')}\nreadyz check passed\n` : 'ok' };
}
