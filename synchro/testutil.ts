// Helpers for synchro's end-to-end tests: simulated clusters, a clusters.yaml, fast
// timings, and the after-the-fact comparison of storage with each cluster's own list.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { SimCluster } from '../hack/sim/cluster.ts';
import { Store } from '../storage/store.ts';
import { startSynchro, type SynchroHandle, type SynchroOptions } from './synchro.ts';
import { setLogLevel } from '../lib/log.ts';
import type { ClusterTimings } from './cluster/cluster.ts';

// Tests log warnings and errors only, unless PANOPTES_LOG_LEVEL asks for more.
if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('warn');

export const fastTimings: Partial<ClusterTimings> = {
  probeIntervalMs: 200,
  discoveryIntervalMs: 500,
  progressIntervalMs: 500,
  statusIntervalMs: 100,
  backoff: { initialMs: 50, maxMs: 400 },
};

export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-synchro-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function writeClusters(file: string, clusters: Array<Record<string, unknown>>): void {
  writeFileSync(file, stringify({ clusters }));
}

/** Resolves once fn() is truthy; throws with `what` after timeoutMs. */
export async function waitUntil<T>(what: string, fn: () => T | Promise<T>, timeoutMs = 15_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}

/**
 * Differences between what storage holds for `cluster` and the simulated cluster's own
 * list, per resource id (`group/resource`): missing, extra, or stale (uid or upstream rv).
 * Empty when storage is an exact copy.
 */
export async function diffCopy(store: Store, sim: SimCluster, cluster: string, ids: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const id of ids) {
    const [group, resource] = id.split('/');
    const upstream = new Map<string, string>();
    if (sim.registry.byId(id)) {
      for (const o of sim.store.list(id).items) upstream.set(`${o.metadata.namespace ?? ''}/${o.metadata.name}`, `${o.metadata.uid}@${o.metadata.resourceVersion}`);
    }
    const stored = new Map<string, string>();
    for (const s of (await store.list({ group, resource, clusters: [cluster] })).items) stored.set(`${s.namespace}/${s.name}`, `${s.uid}@${s.upstreamRv}`);
    for (const [k, v] of upstream) {
      const s = stored.get(k);
      if (s === undefined) out.push(`${cluster} ${id} ${k}: missing`);
      else if (s !== v) out.push(`${cluster} ${id} ${k}: stored ${s}, upstream ${v}`);
    }
    for (const k of stored.keys()) if (!upstream.has(k)) out.push(`${cluster} ${id} ${k}: extra (deleted upstream)`);
  }
  return out;
}

/** Waits until storage is an exact copy; returns the remaining differences on timeout. */
export async function waitForCopy(store: Store, sim: SimCluster, cluster: string, ids: string[], timeoutMs = 15_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  let diff: string[] = [];
  while (Date.now() < deadline) {
    diff = await diffCopy(store, sim, cluster, ids);
    if (diff.length === 0) return diff;
    await new Promise((r) => setTimeout(r, 100));
  }
  return diff;
}

const bin = new URL('../bin/panoptes.mjs', import.meta.url).pathname;

/** A `panoptes` process of a test: its stderr lines (the newest 3000) and its exit code. */
export interface PanoptesProcess {
  name: string;
  child: ChildProcess;
  log: string[];
  exited: Promise<number | null>;
}

export function spawnPanoptes(name: string, args: string[]): PanoptesProcess {
  const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  const log: string[] = [];
  let buf = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    const lines = buf.split('\n');
    buf = lines.pop()!;
    log.push(...lines);
    if (log.length > 3000) log.splice(0, log.length - 3000);
  });
  return { name, child, log, exited: new Promise((r) => child.on('exit', (code) => r(code))) };
}

/**
 * Synchro members in this process, each with its own Store of one database (`url`), started
 * and stopped by identity: `options(identity)` is everything but the store.
 */
export function synchroMembers(url: string, options: (identity: string) => Omit<SynchroOptions, 'store'>) {
  const members = new Map<string, { store: Store; synchro: SynchroHandle }>();
  const stop = async (identity: string): Promise<void> => {
    const m = members.get(identity);
    members.delete(identity);
    await m?.synchro.stop();
    await m?.store.close();
  };
  return {
    members,
    async start(identity: string): Promise<SynchroHandle> {
      const store = await Store.open(url);
      const synchro = await startSynchro({ ...options(identity), store });
      members.set(identity, { store, synchro });
      return synchro;
    },
    stop,
    async stopAll(): Promise<void> {
      for (const id of [...members.keys()]) await stop(id);
    },
  };
}
