import t from 'tap';
import { assignment, capacity, defaultBalanceEpsilon, ownerOf } from './rendezvous.ts';

const clusters = Array.from({ length: 600 }, (_, i) => `cluster-${i}`);
const assign = (members: string[]) => new Map(clusters.map((c) => [c, ownerOf(c, members)!]));

t.test('every member computes the same owner, whatever the order of the list', async (t) => {
  const a = assign(['m1', 'm2', 'm3']);
  const b = assign(['m3', 'm1', 'm2']);
  t.same([...a], [...b]);
  t.equal(ownerOf('x', []), undefined);
});

t.test('balanced', async (t) => {
  const counts = new Map<string, number>();
  for (const owner of assign(['m1', 'm2', 'm3']).values()) counts.set(owner, (counts.get(owner) ?? 0) + 1);
  for (const [m, n] of counts) t.ok(n > 150 && n < 250, `${m} owns ${n} of 600`);
});

t.test('a member joining takes only keys it wins; one leaving gives away only its own', async (t) => {
  const before = assign(['m1', 'm2', 'm3']);
  const joined = assign(['m1', 'm2', 'm3', 'm4']);
  const moved = clusters.filter((c) => before.get(c) !== joined.get(c));
  t.same(moved.filter((c) => joined.get(c) !== 'm4'), [], 'keys move only to the new member');
  t.ok(moved.length > 100 && moved.length < 200, `about a quarter move: ${moved.length}`);
  const left = assign(['m1', 'm3']);
  t.same(clusters.filter((c) => before.get(c) !== 'm2' && left.get(c) !== before.get(c)), [], 'the others stay where they were');
});

t.test('bounded load: two clusters over two members go one to each, for any names', async (t) => {
  let together = 0;
  for (let s = 0; s < 500; s++) {
    const keys = [`east-${s}`, `west-${s}`];
    if (ownerOf(keys[0], ['m1', 'm2']) === ownerOf(keys[1], ['m1', 'm2'])) together++;
    const owners = assignment(keys, ['m1', 'm2']);
    if (new Set(owners.values()).size !== 2) return t.fail(`${keys.join(', ')}: ${JSON.stringify([...owners])}`);
  }
  t.ok(together > 100, `plain rendezvous puts both on one member for ${together} of 500 name sets; bounded load for none`);
});

t.test('bounded load: no member above its capacity; a few keys as even as they can be', async (t) => {
  t.equal(capacity(2, 2), 1);
  t.equal(capacity(7, 2), 4, 'fewer keys than members / epsilon: the even share rounded up');
  t.equal(capacity(600, 3), 250, '(1 + epsilon) times the even share');
  for (const [n, m] of [[1, 3], [3, 2], [5, 4], [7, 3], [40, 3], [600, 3], [600, 7]]) {
    const keys = Array.from({ length: n }, (_, i) => `k${n}-${i}`);
    const members = Array.from({ length: m }, (_, i) => `m${i}`);
    const owners = assignment(keys, members);
    t.equal(owners.size, n, `${n} over ${m}: every key has an owner`);
    const load = new Map<string, number>();
    for (const o of owners.values()) load.set(o, (load.get(o) ?? 0) + 1);
    const most = Math.max(...load.values());
    t.ok(most <= Math.ceil((n / m) * (1 + defaultBalanceEpsilon)), `${n} over ${m}: at most ${most} on one member`);
    if (n < m / defaultBalanceEpsilon) t.equal(most, Math.ceil(n / m), `${n} over ${m}: even`);
  }
  t.same(assignment([], ['m1']), new Map());
  t.same(assignment(['x'], []), new Map());
});

t.test('bounded load: every member computes the same assignment, whatever the order of its inputs', async (t) => {
  const keys = clusters.slice(0, 50);
  const a = assignment(keys, ['m1', 'm2', 'm3']);
  const b = assignment([...keys].reverse(), ['m3', 'm1', 'm2']);
  t.same([...a].sort(), [...b].sort());
});

t.test('bounded load: where no member is full it is plain rendezvous', async (t) => {
  const wide = assignment(clusters, ['m1', 'm2', 'm3'], 10);
  t.same(clusters.filter((c) => wide.get(c) !== ownerOf(c, ['m1', 'm2', 'm3'])), []);
});

t.test('bounded load: a member joining or leaving moves few keys', async (t) => {
  for (const [n, m] of [[2, 2], [3, 2], [10, 3], [50, 4], [600, 3]]) {
    for (let s = 0; s < 10; s++) {
      const keys = Array.from({ length: n }, (_, i) => `set${s}-${i}`);
      const members = Array.from({ length: m }, (_, i) => `m${i}`);
      const before = assignment(keys, members);
      const joined = assignment(keys, [...members, 'new']);
      const left = assignment(keys, members.slice(1));
      const movedOnJoin = keys.filter((k) => before.get(k) !== joined.get(k)).length;
      const movedOnLeave = keys.filter((k) => before.get(k) !== left.get(k)).length;
      // Plain rendezvous moves about n / (m + 1) and n / m; bounded load at most twice that.
      if (movedOnJoin > 2 * Math.ceil(n / (m + 1))) t.fail(`${n} over ${m}, set ${s}: ${movedOnJoin} move when one joins`);
      if (movedOnLeave > 2 * Math.ceil(n / m)) t.fail(`${n} over ${m}, set ${s}: ${movedOnLeave} move when one leaves`);
      // The keys of the members that stay and were not pushed out stay: most of them.
      const stayed = keys.filter((k) => before.get(k) !== 'm0' && left.get(k) === before.get(k)).length;
      if (stayed < keys.filter((k) => before.get(k) !== 'm0').length - Math.ceil(n / m)) t.fail(`${n} over ${m}, set ${s}: only ${stayed} stay when m0 leaves`);
    }
  }
  t.pass('bounded');
});
