// /healthz, /livez and /readyz as kube-apiserver answers them: `ok` (text/plain), `?verbose`
// lists `[+]name ok`; a failure is a 500 naming the failing check. /readyz fails while
// storage does not answer; /livez and /healthz only say the process serves HTTP.
import type { Context } from 'koa';
import type { ReadDatabaseStatus, ReadPool } from '../../storage/read-pool.ts';
import type { Store } from '../../storage/store.ts';
import type { Catalog } from '../discovery/catalog.ts';

export interface HealthCheck {
  name: string;
  /** Resolves when healthy; rejects (or resolves a reason string) when not. */
  check(): Promise<void | string>;
  /** What `?verbose` adds after `ok` (which database reads use). */
  detail?(): string;
}

/** SELECT 1 against storage, bounded in time. */
export function storageCheck(store: Store, timeoutMs = 3000): HealthCheck {
  return {
    name: 'storage',
    async check() {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<string>((resolve) => {
        timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs);
      });
      try {
        return await Promise.race([store.ping(), timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/**
 * With standbys (--storage-read): ready while reads can be served, from a standby or the
 * primary (the primary down alone does not stop reads). `?verbose` says which database reads
 * use and how far behind the primary it is, and why any other is not read (down, too far
 * behind, out of recovery), each by its place in --storage-read: /readyz is served without
 * authentication, so never an address.
 */
export function readStorageCheck(pool: ReadPool, timeoutMs = 3000): HealthCheck {
  return {
    name: 'storage',
    async check() {
      await pool.refresh();
      const r = pool.pick();
      const s = pool.status().find((x) => x.selected);
      if (!s?.up) return 'no database answers reads (neither the primary nor a standby)';
      return storageCheck(r.store, timeoutMs).check();
    },
    detail: () => readsDetail(pool.status(), pool.maxLagMs),
  };
}

const behind = (s: ReadDatabaseStatus) => `${s.lagRv} resource versions and ${s.lagSeconds.toFixed(1)} s behind the primary`;

/** Which database reads use, and why the others are not read, by position (see readStorageCheck). */
export function readsDetail(all: readonly ReadDatabaseStatus[], maxLagMs: number): string {
  const s = all.find((x) => x.selected);
  if (!s) return '';
  const primary = all.find((x) => x.role === 'primary');
  const where = (x: ReadDatabaseStatus) => `${x.role} ${x.index} of ${all.length - 1}`;
  const parts = [s.role === 'primary' ? 'reads the primary' : `reads ${where(s)}, ${behind(s)}${primary?.up ? '' : ' (the primary does not answer)'}`];
  for (const x of all) {
    if (x.selected || x.role === 'primary') continue;
    const which = `standby ${x.index} of ${all.length - 1}`;
    if (!x.up) parts.push(`${which} does not answer`);
    else if (x.role === 'promoted') parts.push(`${which} is out of recovery (promoted)${primary?.up ? ': not read while the primary answers' : ''}`);
    else if (x.lagSeconds * 1000 > maxLagMs) parts.push(`${which} is ${behind(x)} (more than ${maxLagMs / 1000} s): not read`);
  }
  return parts.join('; ');
}

/** The discovery catalog was loaded from storage at least once. */
export function catalogCheck(catalog: Catalog): HealthCheck {
  return { name: 'discovery-catalog', check: async () => (catalog.loadedAt > 0 ? undefined : `not loaded yet${catalog.lastError ? `: ${catalog.lastError}` : ''}`) };
}

export const pingCheck: HealthCheck = { name: 'ping', check: async () => undefined };

/** Serves one health endpoint (`healthz`, `livez`, `readyz`) over the given checks. */
export async function serveHealth(ctx: Context, endpoint: string, checks: HealthCheck[]): Promise<void> {
  const exclude = new Set(new URLSearchParams(ctx.querystring).getAll('exclude'));
  const sub = ctx.path.split('/')[2];
  const selected = sub ? checks.filter((c) => c.name === sub) : checks.filter((c) => !exclude.has(c.name));
  if (sub && selected.length === 0) {
    ctx.status = 404;
    ctx.type = 'text/plain';
    ctx.body = `${endpoint} check ${JSON.stringify(sub)} not found\n`;
    return;
  }
  const results = await Promise.all(
    selected.map(async (c) => {
      try {
        const why = await c.check();
        return { name: c.name, ok: why === undefined, why, detail: why === undefined ? c.detail?.() : undefined };
      } catch (err) {
        return { name: c.name, ok: false, why: (err as Error).message };
      }
    }),
  );
  const failed = results.filter((r) => !r.ok);
  const verbose = new URLSearchParams(ctx.querystring).has('verbose');
  ctx.type = 'text/plain; charset=utf-8';
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Cache-Control', 'no-cache, private');
  const lines = results.map((r) => (r.ok ? `[+]${r.name} ok${'detail' in r && r.detail ? `: ${r.detail}` : ''}` : `[-]${r.name} failed: ${r.why ?? 'reason withheld'}`));
  if (failed.length) {
    ctx.status = 500;
    ctx.body = `${lines.join('\n')}\n${endpoint} check failed\n`;
  } else {
    ctx.status = 200;
    ctx.body = verbose ? `${lines.join('\n')}\n${endpoint} check passed\n` : 'ok';
  }
}
