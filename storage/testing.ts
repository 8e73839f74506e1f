// Test fixtures: a Store on each backend. PostgreSQL comes from PANOPTES_TEST_POSTGRES_URL
// (.ci/run starts one) or from a throwaway server this process starts and stops.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, startPostgres, type PostgresServer } from './testing/postgres.ts';
import { clusterLease, compactorLease, type Fence } from './leases.ts';
import { Store } from './store.ts';
import type { RetentionPolicy, UpstreamEvent } from './types.ts';

export type Backend = 'sqlite' | 'postgres';
export const backends: Backend[] = ['sqlite', 'postgres'];

let server: Promise<PostgresServer> | undefined;
let dbCounter = 0;

async function postgresServerUrl(): Promise<string> {
  const fromEnv = process.env.PANOPTES_TEST_POSTGRES_URL;
  if (fromEnv) return fromEnv;
  if (!server) {
    // Stopped when this test file has nothing else to do: a file need not stop it itself.
    server = startPostgres({ unref: true });
    process.once('beforeExit', () => void stopTestPostgres());
  }
  return (await server).url;
}

/** A storage URL for an empty database on `backend`, and a cleanup function. */
export async function emptyStorageUrl(backend: Backend): Promise<{ url: string; cleanup: () => Promise<void> }> {
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'panoptes-test-'));
    return { url: `sqlite:${join(dir, 'panoptes.db')}`, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `panoptes_test_${process.pid}_${++dbCounter}_${Date.now() % 100000}`;
  const url = await createDatabase(await postgresServerUrl(), name);
  return { url, cleanup: async () => {} };
}

/** Opens a Store on an empty database; `t.teardown` it with the returned close. */
export async function openTestStore(backend: Backend): Promise<{ store: Store; url: string; close: () => Promise<void> }> {
  const { url, cleanup } = await emptyStorageUrl(backend);
  const store = await Store.open(url);
  return {
    store,
    url,
    close: async () => {
      await store.close();
      await cleanup();
    },
  };
}

/** Takes `lease` for `holder` (for a minute) and returns its fence: a test's writer under a lease. */
export async function takeLease(store: Store, lease: string, holder = 'test'): Promise<Fence> {
  const epoch = await store.acquireLease(lease, holder, 60_000);
  if (epoch === undefined) throw new Error(`takeLease: ${lease} is held by another holder`);
  return { lease, holder, epoch };
}

/**
 * Runs `write` as the holder of `lease` (holder `test`), then gives the lease up, so that a
 * synchro started later takes it at once: how tests write what only a lease holder may.
 */
export async function underTestLease<T>(store: Store, lease: string, write: (fence: Fence) => Promise<T>): Promise<T> {
  const fence = await takeLease(store, lease);
  try {
    return await write(fence);
  } finally {
    await store.releaseLease(lease, fence.holder, fence.epoch);
  }
}

/** Registers a member cluster with a status, as its synchro writes them (the apiserver's discovery reads them). */
export async function seedCluster(store: Store, name: string, status: Record<string, unknown>, spec: Record<string, unknown> = { name }): Promise<void> {
  await underTestLease(store, clusterLease(name), async (fence) => {
    await store.upsertCluster(name, spec, fence);
    await store.setClusterStatus(name, status, fence);
  });
}

/** Compacts the change log now, as the compactor does under its lease. */
export function compactNow(store: Store, policy: RetentionPolicy): ReturnType<Store['compact']> {
  return underTestLease(store, compactorLease, (fence) => store.compact(policy, fence));
}

/** Stores the Cluster object of a member cluster as synchro writes it for a clusters.yaml entry (spec.source: file). */
export async function seedClusterObject(store: Store, name: string, status: Record<string, unknown>, spec: Record<string, unknown> = {}): Promise<void> {
  await underTestLease(store, clusterLease(name), (fence) =>
    store.writeClusterObject(
      name,
      (cur) => ({
        action: 'put',
        object: {
          apiVersion: 'panoptes.io/v1alpha1',
          kind: 'Cluster',
          metadata: { name, uid: cur?.uid ?? `uid-cluster-${name}`, generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
          spec: { source: 'file', ...spec },
          status,
        },
      }),
      fence,
    ),
  );
}

/** Stops the throwaway server, if this process started one. */
export async function stopTestPostgres(): Promise<void> {
  if (server) await (await server).stop();
  server = undefined;
}

/** An upstream event for a pod, with the fields tests select on. */
/** A member's CustomResourceDefinition of `plural`.example.com (namespaced, v1 served) as its watch delivers it. */
export function crdEvent(type: 'ADDED' | 'MODIFIED' | 'DELETED', plural: string, kind: string, upstreamRv: string, shortNames?: string[]): UpstreamEvent {
  return {
    type,
    group: 'apiextensions.k8s.io',
    version: 'v1',
    resource: 'customresourcedefinitions',
    object: {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `${plural}.example.com`, uid: `uid-${plural}`, resourceVersion: upstreamRv },
      spec: { group: 'example.com', scope: 'Namespaced', names: { plural, singular: kind.toLowerCase(), kind, ...(shortNames ? { shortNames } : {}) }, versions: [{ name: 'v1', served: true, storage: true }] },
    },
  };
}

export function podEvent(
  type: 'ADDED' | 'MODIFIED' | 'DELETED',
  namespace: string,
  name: string,
  upstreamRv: string,
  opts: { labels?: Record<string, string>; uid?: string; nodeName?: string; phase?: string; owner?: string } = {},
): UpstreamEvent {
  return {
    type,
    group: '',
    version: 'v1',
    resource: 'pods',
    object: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace,
        uid: opts.uid ?? `uid-${namespace}-${name}`,
        resourceVersion: upstreamRv,
        creationTimestamp: '2026-01-01T00:00:00Z',
        ...(opts.labels ? { labels: opts.labels } : {}),
        ...(opts.owner ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: opts.owner, controller: true }] } : {}),
      },
      spec: { nodeName: opts.nodeName ?? 'node-1' },
      status: { phase: opts.phase ?? 'Running' },
    },
  };
}

/**
 * Makes storage refuse, from now on, every object whose JSON holds `marker`: a constraint only
 * tests add (a CHECK on PostgreSQL, a trigger on SQLite), so a refusal by the database itself
 * can be provoked on either engine.
 */
export async function refuseObjectsHolding(store: Store, marker: string): Promise<void> {
  if (!/^[a-z0-9-]+$/.test(marker)) throw new Error('marker: lowercase letters, digits and dashes');
  const k = store.conn.knex;
  if (store.dialect === 'postgres') await k.raw(`ALTER TABLE objects ADD CONSTRAINT test_refuse_${marker.replace(/-/g, '_')} CHECK (object NOT LIKE '%${marker}%')`);
  else for (const op of ['INSERT', 'UPDATE']) await k.raw(`CREATE TRIGGER test_refuse_${marker.replace(/-/g, '_')}_${op} BEFORE ${op} ON objects WHEN NEW.object LIKE '%${marker}%' BEGIN SELECT RAISE(ABORT, 'refused by a test'); END`);
}

/**
 * Starts a write and holds its transaction open just before commit (its rows written), until
 * `release`: how tests make commits interleave. Resolves once the write is held.
 */
export async function heldOpen<T>(write: (opts: { beforeCommit: () => Promise<void> }) => Promise<T>): Promise<{ release: () => void; done: Promise<T> }> {
  let release!: () => void;
  let done!: Promise<T>;
  await new Promise<void>((held) => {
    done = write({
      beforeCommit: () => {
        held();
        return new Promise<void>((r) => (release = r));
      },
    });
  });
  return { release, done };
}
