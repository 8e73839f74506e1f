// Two synchro members share two clusters one each, whatever their names (bounded-load
// rendezvous), on both backends; clusters only left in storage to be removed carry no load.
import t from 'tap';
import type { Logger } from '../../lib/log.ts';
import { backends, openTestStore, stopTestPostgres } from '../../storage/testing.ts';
import { defaultShardSettings, Membership } from './membership.ts';
import { SynchroMetrics } from '../metrics/metrics.ts';
import { ownerOf } from './rendezvous.ts';

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, child: () => quiet };

/** Two names that plain rendezvous over a and b gives both to one member. */
function together(prefix: string): string[] {
  for (let i = 0; i < 200; i++) {
    const names = [`${prefix}-east-${i}`, `${prefix}-west-${i}`];
    if (ownerOf(names[0], ['a', 'b']) === ownerOf(names[1], ['a', 'b'])) return names;
  }
  throw new Error('no pair found');
}

for (const backend of backends) {
  t.test(`${backend}: two members, two clusters: one each`, async (t) => {
    const { store, close } = await openTestStore(backend);
    const members = ['a', 'b'].map((identity) => new Membership(store, defaultShardSettings({ identity, leaseTtlMs: 10_000 }), new SynchroMetrics(), quiet, () => undefined));
    t.teardown(async () => {
      for (const m of members) await m.stop();
      await close();
    });
    for (const m of members) await m.join(true);
    const names = together(backend);
    const shares = [];
    // Each sees both once the other has heartbeated: the second pass of each agrees.
    for (let pass = 0; pass < 2; pass++) for (const m of members) shares[members.indexOf(m)] = await m.share(names, async () => undefined);
    t.same(shares.map((s) => s.mine.length), [1, 1], `one each (${JSON.stringify(shares.map((s) => s.mine))})`);
    t.same([...shares[0].mine, ...shares[1].mine].sort(), [...names].sort(), 'both held');
    t.equal(shares[0].others.get(shares[1].mine[0]), 'b', 'a knows what b owns');
    t.equal(shares[1].others.get(shares[0].mine[0]), 'a', 'b knows what a owns');

    // A third name only to remove goes by plain rendezvous and moves nothing else.
    const removal = `${backend}-gone`;
    const again = await members[0].share([...names, removal], async () => undefined, new Set([removal]));
    t.same(again.mine.filter((n) => names.includes(n)), shares[0].mine, 'the others stay where they were');
    t.equal(again.mine.includes(removal) ? 'a' : again.others.get(removal), ownerOf(removal, ['a', 'b']));
  });
}

t.teardown(stopTestPostgres);
