// The status of a MultiClusterService: each consumer's entry and conditions from a pass's
// outcome, one member's entries merged without touching the others', Ready and
// observedGeneration over every consumer, when the finalizer may go, and what is worth an
// immediate write.
import t from 'tap';
import { mcsFinalizer, type McsConsumerStatus } from '../../api/multicluster-service.ts';
import type { KeyPlan } from './desired.ts';
import { consumerEntry, everyConsumerCleaned, mergeStatus, statusDigest, withoutFinalizer, type ConsumerOutcome } from './status.ts';

const NOW = '2026-03-01T12:00:00Z';
const LATER = '2026-03-01T12:05:00Z';

function plan(over: Partial<KeyPlan> = {}): KeyPlan {
  const ensure = { kind: 'ensure' as const, object: {} };
  const refused = { endpoints: 0, examples: [] };
  return {
    key: { namespace: 'shop', name: 'web' },
    source: 'MultiClusterService',
    deleting: false,
    generation: 4,
    consumerSet: ['east', 'lab', 'west'],
    consumers: new Map([
      ['east', { cluster: 'east', service: { kind: 'provider' as const }, slices: new Map(), refused }],
      ['west', { cluster: 'west', service: ensure, slices: new Map([['east-a', {}]]), refused }],
      ['lab', { cluster: 'lab', service: { kind: 'conflict' as const, message: 'lab has its own Service shop/web' }, slices: new Map(), refused }],
    ]),
    providers: [{ cluster: 'east', endpoints: 2, ready: true }],
    dispatching: ['east'],
    away: [],
    ungranted: [],
    ...over,
  };
}

const outcome = (cluster: string, over: Partial<ConsumerOutcome> = {}): ConsumerOutcome => ({ cluster, serviceInPlace: true, slices: 1, endpoints: 2, wrote: true, inSync: true, holdsNothing: false, conflicts: [], ...over });
const conds = (e: McsConsumerStatus) => e.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`);

t.test('a consumer entry from what a pass found and did', async (t) => {
  const cases: Array<{ name: string; cluster: string; o: Partial<ConsumerOutcome>; plan?: Partial<KeyPlan>; want: string[]; applied: boolean }> = [
    { name: 'in place', cluster: 'west', o: {}, want: ['ServiceApplied=True/ServiceApplied', 'EndpointSlicesDispatched=True/Dispatched'], applied: true },
    { name: 'a provider: its own Service, nothing added to it', cluster: 'east', o: { slices: 0, endpoints: 0 }, want: ['ServiceApplied=True/ProviderService', 'EndpointSlicesDispatched=True/ProviderService'], applied: true },
    { name: 'a conflict', cluster: 'lab', o: { serviceInPlace: false, inSync: false }, want: ['ServiceApplied=False/ServiceConflict', 'EndpointSlicesDispatched=False/ServiceConflict'], applied: false },
    { name: 'no RBAC', cluster: 'west', o: { blocked: { reason: 'Forbidden', message: 'may not write' }, serviceInPlace: false, inSync: false, wrote: false }, want: ['ServiceApplied=False/Forbidden', 'EndpointSlicesDispatched=False/Forbidden'], applied: false },
    { name: 'unreachable', cluster: 'west', o: { blocked: { reason: 'ConsumerUnreachable', message: 'away' }, inSync: false, wrote: false }, want: ['ServiceApplied=False/ConsumerUnreachable', 'EndpointSlicesDispatched=False/ConsumerUnreachable'], applied: false },
    { name: 'the Service in place, a slice write failed', cluster: 'west', o: { error: { reason: 'Invalid', message: 'bad' }, inSync: false }, want: ['ServiceApplied=True/ServiceApplied', 'EndpointSlicesDispatched=False/Invalid'], applied: true },
    { name: 'deleting', cluster: 'west', o: { holdsNothing: true }, plan: { deleting: true, consumers: new Map() }, want: ['ServiceApplied=False/Deleting', 'EndpointSlicesDispatched=False/Deleting'], applied: false },
    { name: 'no longer a consumer', cluster: 'dev', o: {}, want: ['ServiceApplied=False/NotAConsumer', 'EndpointSlicesDispatched=False/NotAConsumer'], applied: false },
  ];
  for (const c of cases) {
    const e = consumerEntry(plan(c.plan), outcome(c.cluster, c.o), undefined, NOW);
    t.same(conds(e), c.want, c.name);
    t.equal(e.serviceApplied, c.applied, `${c.name}: serviceApplied`);
    t.ok(e.conditions.every((x) => x.observedGeneration === 4 && x.lastTransitionTime === NOW), `${c.name}: generation and time`);
  }
  const failed = consumerEntry(plan(), outcome('west', { blocked: { reason: 'Forbidden', message: 'may not write' }, inSync: false, wrote: false }), undefined, NOW);
  t.equal(failed.lastError, 'Forbidden: may not write');
  t.notOk(failed.lastDispatchTime);
  const ok = consumerEntry(plan(), outcome('west'), failed, LATER);
  t.notOk(ok.lastError, 'in place again: the error is cleared');
  t.equal(ok.lastDispatchTime, LATER);
  t.same(ok.conditions.map((c) => c.lastTransitionTime), [LATER, LATER], 'the status moved: transition now');
  const same = consumerEntry(plan(), outcome('west', { wrote: false, endpoints: 5 }), ok, '2026-03-01T13:00:00Z');
  t.same(same.conditions.map((c) => c.lastTransitionTime), [LATER, LATER], 'the status did not move: the transition time stays');
  t.equal(same.lastDispatchTime, LATER, 'nothing written: the last dispatch time stays');
  t.equal(same.endpoints, 5);
  t.equal(consumerEntry(plan({ deleting: true, consumers: new Map() }), outcome('west', { holdsNothing: true }), undefined, NOW).cleanedUp, true);
  t.equal(consumerEntry(plan({ deleting: true, consumers: new Map() }), outcome('west', { holdsNothing: false }), undefined, NOW).cleanedUp, false);
});

t.test("merging one member's entries: the others' stay; Ready and observedGeneration over every consumer", async (t) => {
  const p = plan({ consumers: new Map([...plan().consumers].filter(([c]) => c !== 'lab')), consumerSet: ['east', 'west'] });
  const east = consumerEntry(p, outcome('east'), undefined, NOW);
  const west = consumerEntry(p, outcome('west'), undefined, NOW);
  const other = { ...consumerEntry({ ...p, generation: 3 }, outcome('east'), undefined, NOW) };
  const first = mergeStatus(undefined, p, [west], [], NOW);
  t.same(first.consumers?.map((c) => c.cluster), ['west']);
  t.match(first.conditions?.[0], { type: 'Ready', status: 'False', reason: 'ConsumersNotReady', message: 'not dispatched to east (no status yet)' });
  t.equal(first.observedGeneration, 4);
  const both = mergeStatus({ ...first, consumers: [other, west] }, p, [], [], NOW);
  t.equal(both.observedGeneration, 3, 'an entry written for generation 3: the status has observed 3');
  t.match(both.conditions?.[0], { type: 'Ready', status: 'True', reason: 'Dispatched' });
  const mine = mergeStatus(both, p, [east], [], LATER);
  t.same(mine.consumers, [east, west], "the other member's entry is untouched, mine replaced");
  t.equal(mine.observedGeneration, 4);
  t.equal(mine.conditions?.[0].lastTransitionTime, NOW, 'Ready stayed True: its transition time stays');
  t.same(mine.providers, p.providers);
  const dropped = mergeStatus(mine, p, [], ['west'], LATER);
  t.same(dropped.consumers?.map((c) => c.cluster), ['east'], 'a former consumer that holds nothing any more loses its entry');
  t.match(mergeStatus(undefined, plan({ consumerSet: [], consumers: new Map() }), [], [], NOW).conditions?.[0], { status: 'False', reason: 'NoConsumers' });
  t.match(mergeStatus(undefined, plan({ deleting: true }), [], [], NOW).conditions?.[0], { status: 'False', reason: 'Deleting' });
});

t.test('the finalizer goes once every consumer (and every cluster with an entry) is cleaned up', async (t) => {
  const cleaned = (cluster: string, c: boolean): McsConsumerStatus => ({ cluster, serviceApplied: false, endpointSlices: 0, endpoints: 0, conditions: [], cleanedUp: c });
  const set = (consumerSet: string[], away: string[] = []) => ({ consumerSet, away });
  t.ok(everyConsumerCleaned({ consumers: [cleaned('a', true), cleaned('b', true)] }, set(['a', 'b'])));
  t.notOk(everyConsumerCleaned({ consumers: [cleaned('a', true)] }, set(['a', 'b'])), 'b has not said so');
  t.notOk(everyConsumerCleaned({ consumers: [cleaned('a', true), cleaned('b', false)] }, set(['a', 'b'])));
  t.notOk(everyConsumerCleaned({ consumers: [cleaned('a', true), cleaned('old', false)] }, set(['a'])), 'a former consumer with an entry too');
  t.ok(everyConsumerCleaned(undefined, set([])), 'no consumer at all');
  t.ok(everyConsumerCleaned({ consumers: [cleaned('a', true), cleaned('b', false)] }, set(['a', 'b'], ['b'])), 'a consumer away is not waited for');
  t.ok(everyConsumerCleaned({ consumers: [cleaned('a', true), cleaned('gone', false)] }, set(['a'], ['gone'])), 'nor a cluster no longer registered, with an entry');
  t.match(mergeStatus({ consumers: [cleaned('a', true), cleaned('b', false)] }, plan({ deleting: true, consumerSet: ['a', 'b'], away: ['b'] }), [], [], NOW).conditions?.[0], { reason: 'Deleting', message: /^everything dispatched is removed; not waiting for b \(not Ready/ });
  const obj = { metadata: { name: 'web', finalizers: ['other', mcsFinalizer] } };
  t.same(withoutFinalizer(obj)?.metadata?.finalizers, ['other']);
  t.equal(withoutFinalizer({ metadata: { finalizers: ['other'] } }), undefined);
});

t.test('what is written at once and what may wait: counts and times', async (t) => {
  const p = plan();
  const a = mergeStatus(undefined, p, [consumerEntry(p, outcome('west'), undefined, NOW)], [], NOW);
  const counts = mergeStatus(a, { ...p, providers: [{ cluster: 'east', endpoints: 3, ready: true }] }, [consumerEntry(p, outcome('west', { endpoints: 3 }), a.consumers![0], LATER)], [], LATER);
  t.equal(statusDigest(a).major, statusDigest(counts).major, 'endpoint counts and dispatch times: minor');
  t.not(statusDigest(a).all, statusDigest(counts).all);
  const failed = mergeStatus(a, p, [consumerEntry(p, outcome('west', { error: { reason: 'Invalid', message: 'x' }, inSync: false }), a.consumers![0], LATER)], [], LATER);
  t.not(statusDigest(a).major, statusDigest(failed).major, 'a condition: major');
  const gone = mergeStatus(a, { ...p, providers: [{ cluster: 'east', endpoints: 2, ready: false, notReadySince: NOW }] }, [], [], LATER);
  t.not(statusDigest(a).major, statusDigest(gone).major, "a provider's readiness: major");
});

t.test('refused addresses, failures that last, and clusters the spec names without their role, in the status', async (t) => {
  const refused = plan({
    consumers: new Map([['west', { cluster: 'west', service: { kind: 'ensure' as const, object: {} }, slices: new Map([['x', {}]]), refused: { endpoints: 2, examples: ['east/shop/web-a: 169.254.169.254 may not be in the link-local range (169.254.0.0/16, fe80::/10)'] } }]]),
  });
  const e = consumerEntry(refused, outcome('west'), undefined, NOW);
  t.same(conds(e), ['ServiceApplied=True/ServiceApplied', 'EndpointSlicesDispatched=False/AddressesRefused'], 'what is dispatched is in place, but not everything is');
  t.match(e.conditions[1].message, /^2 endpoints not dispatched \(east\/shop\/web-a: 169\.254\.169\.254 may not be in the link-local range .*; \.\.\.\); the others are$/);
  t.equal(e.refusedEndpoints, 2);

  const fail = { error: { reason: 'Forbidden', message: 'writing EndpointSlice shop/x in cluster west: exceeded quota' }, inSync: false };
  const first = consumerEntry(plan(), outcome('west', { ...fail, failingSince: '2026-03-01T11:58:00Z' }), undefined, NOW);
  t.equal(first.failingSince, '2026-03-01T11:58:00Z', "the first failure's time, as the dispatcher recorded it");
  t.equal(consumerEntry(plan(), outcome('west', fail), first, LATER).failingSince, '2026-03-01T11:58:00Z', 'kept while it fails (also across a restart: from the entry)');
  t.equal(consumerEntry(plan(), outcome('west'), first, LATER).failingSince, undefined, 'in place again: gone');
  t.match(consumerEntry(plan(), outcome('west', fail), undefined, NOW).lastError, /^Forbidden: writing EndpointSlice shop\/x in cluster west: exceeded quota$/, "the object's own error");

  const provider = consumerEntry(plan({ dispatching: ['east', 'lab'] }), outcome('east', { slices: 0, endpoints: 0 }), undefined, NOW);
  t.match(provider.conditions[1].message, 'east provides shop/web itself: its own Service is used as it is, without the endpoints of lab (Panoptes adds nothing to a Service it did not create)');

  const named = mergeStatus(undefined, plan({ ungranted: ['lab is not a consumer (spec.multiClusterServices.consumer of Cluster lab is not true)'] }), [], [], NOW);
  t.match(named.conditions?.[0].message, /; not taking part: lab is not a consumer \(spec\.multiClusterServices\.consumer of Cluster lab is not true\)$/);
});
