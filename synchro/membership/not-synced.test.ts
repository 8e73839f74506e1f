// NotSyncedMarker: a cluster nobody syncs is marked not Ready in its status row and in its
// Cluster object, and a write that fails between the two is completed by the next pass.
import t from 'tap';
import { logger } from '../../lib/log.ts';
import { clusterLease } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import { backends, openTestStore, seedCluster, seedClusterObject } from '../../storage/testing.ts';
import { Membership, defaultShardSettings } from './membership.ts';
import { SynchroMetrics } from '../metrics/metrics.ts';
import { NotSyncedMarker, notSyncedReason } from './not-synced.ts';

const ready = { phase: 'Ready', ready: true, conditions: [{ type: 'Ready', status: 'True', reason: 'Synced' }], owner: 'z' };

/** `store`, whose `method` throws once while `fail.armed`. */
function failingOnce(store: Store, method: 'setClusterStatus' | 'writeClusterObject', fail: { armed: boolean }): Store {
  return new Proxy(store, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (prop === method && fail.armed) {
        return () => {
          fail.armed = false;
          return Promise.reject(new Error('connection reset'));
        };
      }
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

for (const backend of backends) {
  for (const method of ['writeClusterObject', 'setClusterStatus'] as const) {
    t.test(`${backend}: a failed ${method} while marking: the next pass marks the status row and the Cluster object both`, async (t) => {
      const { store, close } = await openTestStore(backend);
      t.teardown(close);
      await seedCluster(store, 'east', ready);
      await seedClusterObject(store, 'east', ready);
      const m = new Membership(store, defaultShardSettings({ identity: 'a', leaseTtlMs: 3000 }), new SynchroMetrics(), logger('test'), () => undefined);
      t.teardown(() => m.stop());
      m.start();
      await m.join();
      const fail = { armed: true };
      const marker = new NotSyncedMarker(failingOnce(store, method, fail), m, 0, logger('test'));
      const others = new Map([['east', 'z']]);
      const marked = async () => ({
        row: (await store.getCluster('east'))?.status.reason,
        object: ((await store.getClusterObject('east'))?.object.status as { reason?: string } | undefined)?.reason,
      });

      await t.rejects(marker.check(others, Date.now()), /connection reset/, 'the first pass fails');
      t.notOk(fail.armed, `the ${method} failed`);
      t.equal(m.epoch(clusterLease('east')), undefined, 'the lease is released after the failure');
      await marker.check(others, Date.now());
      t.same(await marked(), { row: notSyncedReason, object: notSyncedReason }, 'both marked by the next pass');
      const from = await store.watermark();
      await marker.check(others, Date.now());
      t.same((await store.changesAfter(from, 100)).length, 0, 'a marked cluster is not written again');
    });
  }
}
