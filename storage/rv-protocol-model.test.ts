// A model of the parallel write protocol (storage/README.md "One rv order, written in
// parallel"), explored over every interleaving of a few writers, a poller, a list snapshot and
// a lease takeover, with aborts at every step after allocation. It checks the contract:
// (a) the poller never skips a row that commits late and never sees a hole, (b) no rv twice,
// (c) a list at its watermark W plus a watch from W holds every change exactly once,
// (d) a writer whose lease moved on writes nothing. Two weaker protocols run as controls and
// must fail it: kine's (no waits, watermark = MAX(rv)) and one that waits for the previous
// ticket only.
import t from 'tap';

type Protocol = 'ordered' | 'kine' | 'previous-ticket' | 'no-gap-rows';

/** What one writer does: how many changes it appends, where it aborts (if it does), whether it runs exclusively. */
interface Plan {
  n: number;
  abortAt?: 'write' | 'publish' | 'commit';
  exclusive?: boolean;
}

type Phase = 'start' | 'fenced' | 'allocated' | 'written' | 'published' | 'done' | 'aborted';

interface Writer {
  phase: Phase;
  epoch: number;
  first: number;
  preds: number[];
  /** Gap rows this writer will commit with its own. */
  gaps: number[];
}

interface State {
  next: number;
  /** Ticket holders (writer index), in allocation order. */
  tickets: number[];
  /** The last allocator (for the previous-ticket control). */
  lastAllocator: number;
  writers: Writer[];
  /** Committed rows: rv → writer (-1: a gap row). */
  rows: Array<[number, number]>;
  watermark: number;
  /** The lease: its epoch, and whether a takeover has happened. */
  leaseEpoch: number;
  takenOver: boolean;
  /** Parallel writers holding the world lock shared; -1 when none holds it exclusively. */
  worldShared: number;
  worldExclusive: number;
  /** The poller's position and what it delivered. */
  polled: number;
  delivered: number[];
  /** The list: its watermark and the rvs its snapshot held (undefined until taken). */
  list?: { w: number; rvs: number[] };
  /** The watch from the list's watermark: what it delivered. */
  watched: number[];
  violation?: string;
}

const clone = (s: State): State => JSON.parse(JSON.stringify(s)) as State;

function visibleAbove(s: State, rv: number): number[] {
  return s.rows.map(([r]) => r).filter((r) => r > rv).sort((a, b) => a - b);
}

/** The actions enabled in `s`, each producing its successor. */
function actions(s: State, plans: Plan[], protocol: Protocol): Array<() => State> {
  const out: Array<() => State> = [];
  s.writers.forEach((w, i) => {
    const plan = plans[i];
    const step = (f: (n: State, me: Writer) => void) => () => {
      const n = clone(s);
      f(n, n.writers[i]);
      return n;
    };
    const release = (n: State) => {
      n.tickets = n.tickets.filter((x) => x !== i);
      if (plan.exclusive) n.worldExclusive = -1;
      else n.worldShared--;
    };
    switch (w.phase) {
      case 'start': {
        // Fences and the world lock: shared unless exclusive; exclusive waits for every holder.
        const can = plan.exclusive ? s.worldShared === 0 && s.worldExclusive === -1 : s.worldExclusive === -1;
        if (can)
          out.push(
            step((n, me) => {
              if (plan.exclusive) n.worldExclusive = i;
              else n.worldShared++;
              me.epoch = n.leaseEpoch;
              me.phase = 'fenced';
            }),
          );
        break;
      }
      case 'fenced':
        out.push(
          step((n, me) => {
            me.first = n.next;
            n.next += plan.n;
            // 'ordered' reads the tickets only when the watermark is not just below its rvs (when it
            // is, every rv below is published: no earlier writer is in flight).
            me.preds =
              protocol === 'previous-ticket' ? (n.tickets.includes(n.lastAllocator) ? [n.lastAllocator] : []) : protocol === 'kine' ? [] : n.watermark === me.first - 1 ? [] : [...n.tickets];
            n.tickets.push(i);
            n.lastAllocator = i;
            me.phase = 'allocated';
          }),
        );
        break;
      case 'allocated':
        out.push(step((_n, me) => void (me.phase = 'written')));
        // The head of the line (no writer was in flight when it allocated) may publish in its
        // write statement: the gaps below it from the watermark as that statement reads it.
        if (protocol === 'ordered' && w.preds.length === 0)
          out.push(
            step((n, me) => {
              for (let r = n.watermark + 1; r < me.first; r++) me.gaps.push(r);
              me.phase = 'published';
            }),
          );
        if (plan.abortAt === 'write') out.push(step((n, me) => (release(n), void (me.phase = 'aborted'))));
        break;
      case 'written': {
        const waiting = w.preds.some((p) => s.tickets.includes(p));
        if (!waiting)
          out.push(
            step((n, me) => {
              if (protocol === 'ordered' || protocol === 'previous-ticket') for (let r = n.watermark + 1; r < me.first; r++) me.gaps.push(r);
              me.phase = 'published';
            }),
          );
        if (plan.abortAt === 'publish') out.push(step((n, me) => (release(n), void (me.phase = 'aborted'))));
        break;
      }
      case 'published':
        out.push(
          step((n, me) => {
            // Commit: the rows, the gap rows and the watermark at once, then the locks.
            if (me.epoch !== n.leaseEpoch) n.violation = `(d) writer ${i} committed under epoch ${me.epoch} after the lease moved to ${n.leaseEpoch}`;
            for (const g of me.gaps) n.rows.push([g, -1]);
            for (let r = me.first; r < me.first + plan.n; r++) n.rows.push([r, i]);
            const seen = new Set<number>();
            for (const [r] of n.rows) {
              if (seen.has(r)) n.violation = `(b) rv ${r} twice`;
              seen.add(r);
            }
            const last = me.first + plan.n - 1;
            n.watermark = protocol === 'kine' ? Math.max(...n.rows.map(([r]) => r)) : Math.max(n.watermark, last);
            release(n);
            me.phase = 'done';
          }),
        );
        if (plan.abortAt === 'commit') out.push(step((n, me) => (release(n), void (me.phase = 'aborted'))));
        break;
    }
  });
  // A lease takeover waits for every writer holding the fence (shared, from 'fenced' to its end).
  if (!s.takenOver && s.writers.every((w) => w.phase === 'start' || w.phase === 'done' || w.phase === 'aborted'))
    out.push(() => {
      const n = clone(s);
      n.leaseEpoch++;
      n.takenOver = true;
      return n;
    });
  // The poller: one snapshot, every visible row after its position, in rv order.
  const fresh = visibleAbove(s, s.polled);
  if (fresh.length > 0)
    out.push(() => {
      const n = clone(s);
      if (fresh[0] !== n.polled + 1) n.violation = `(a) the poller at ${n.polled} read ${fresh[0]} first: a hole`;
      n.delivered.push(...fresh);
      n.polled = fresh[fresh.length - 1];
      return n;
    });
  // The list: one snapshot at the watermark; then its watch reads rv > W like a poller.
  if (!s.list)
    out.push(() => {
      const n = clone(s);
      n.list = { w: n.watermark, rvs: n.rows.map(([r]) => r).filter((r) => r <= n.watermark) };
      if (n.rows.some(([r]) => r > n.watermark)) n.violation = `(c) the list at ${n.watermark} holds a row above it`;
      return n;
    });
  else {
    const from = s.watched.length ? s.watched[s.watched.length - 1] : s.list.w;
    const more = visibleAbove(s, from);
    if (more.length > 0)
      out.push(() => {
        const n = clone(s);
        n.watched.push(...more);
        return n;
      });
  }
  return out;
}

/** Checks a final state (nothing enabled): everything committed was delivered once, in order. */
function checkFinal(s: State): string | undefined {
  if (s.violation) return s.violation;
  if (s.writers.some((w) => w.phase !== 'done' && w.phase !== 'aborted')) return 'stuck: a writer can never finish (deadlock)';
  const all = s.rows.map(([r]) => r).sort((a, b) => a - b);
  if (JSON.stringify(s.delivered) !== JSON.stringify(all)) return `(a) the poller delivered ${JSON.stringify(s.delivered)} of ${JSON.stringify(all)}`;
  if (s.list) {
    const got = [...s.list.rvs, ...s.watched].sort((a, b) => a - b);
    if (JSON.stringify(got) !== JSON.stringify(all)) return `(c) the list at ${s.list.w} (${JSON.stringify(s.list.rvs)}) and its watch (${JSON.stringify(s.watched)}) hold ${JSON.stringify(got)}, not ${JSON.stringify(all)}`;
  }
  return undefined;
}

/** Every interleaving of `plans` (memoized by state); the first violation found, and how many states were seen. */
function explore(plans: Plan[], protocol: Protocol): { violation?: string; states: number } {
  const initial: State = {
    next: 1,
    tickets: [],
    lastAllocator: -1,
    writers: plans.map(() => ({ phase: 'start', epoch: 0, first: 0, preds: [], gaps: [] })),
    rows: [],
    watermark: 0,
    leaseEpoch: 1,
    takenOver: false,
    worldShared: 0,
    worldExclusive: -1,
    polled: 0,
    delivered: [],
    watched: [],
  };
  const seen = new Set<string>();
  const stack: State[] = [initial];
  while (stack.length > 0) {
    const s = stack.pop()!;
    const key = JSON.stringify(s);
    if (seen.has(key)) continue;
    seen.add(key);
    if (seen.size > 3_000_000) throw new Error('state space beyond the bound');
    if (s.violation) return { violation: s.violation, states: seen.size };
    const next = actions(s, plans, protocol);
    if (next.length === 0) {
      const v = checkFinal(s);
      if (v) return { violation: v, states: seen.size };
      continue;
    }
    for (const a of next) stack.push(a());
  }
  return { states: seen.size };
}

/**
 * The writer mixes explored: every size mix of writers that all commit; each writer aborting at
 * each point (after allocating 2 rvs, the others 1); and an exclusive writer among parallel ones.
 */
function mixes(writers: number): Plan[][] {
  let sizes: Plan[][] = [[]];
  for (let i = 0; i < writers; i++) sizes = sizes.flatMap((m) => [1, 2].map((n) => [...m, { n }]));
  const aborting: Plan[][] = [];
  for (let i = 0; i < writers; i++)
    for (const abortAt of ['write', 'publish', 'commit'] as const) aborting.push(Array.from({ length: writers }, (_, j) => (j === i ? { n: 2, abortAt } : { n: 1 })));
  const exclusive = Array.from({ length: writers }, (_, i) => Array.from({ length: writers }, (_, j) => ({ n: 1, ...(j === i ? { exclusive: true } : {}) })));
  return [...sizes, ...aborting, ...exclusive];
}

t.test('the ordered-commit protocol keeps the contract in every interleaving of 3 writers', async (t) => {
  let states = 0;
  let runs = 0;
  for (const plans of mixes(3)) {
    const r = explore(plans, 'ordered');
    states += r.states;
    runs++;
    if (r.violation) {
      t.fail(`${JSON.stringify(plans)}: ${r.violation}`);
      return;
    }
  }
  t.pass(`${runs} writer mixes, ${states} states, no violation`);
});

for (const [protocol, expected] of [
  ['kine', /\((a|c)\)/],
  ['previous-ticket', /\((a|b|c)\)/],
  ['no-gap-rows', /\(a\) the poller at \d+ read \d+ first: a hole/],
] as const) {
  t.test(`control: the ${protocol} protocol breaks the contract, and the checker finds it`, async (t) => {
    let found: string | undefined;
    for (const plans of mixes(3)) {
      const r = explore(plans, protocol);
      if (r.violation) {
        found = `${JSON.stringify(plans)}: ${r.violation}`;
        break;
      }
    }
    t.match(found, expected, found ?? 'no violation found');
  });
}
