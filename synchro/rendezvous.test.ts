import t from 'tap';
import { ownerOf } from './rendezvous.ts';

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
