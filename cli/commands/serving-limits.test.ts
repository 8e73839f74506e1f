// The limits flags of apiserver and all-in-one: --max-limit, --request-timeout, --proxy-write-wait.
import t from 'tap';
import { UsageError } from '../command.ts';
import { servingLimits } from './apiserver.ts';

t.test('defaults', async (t) => {
  t.same(servingLimits({}), { maxLimit: 10_000, requestTimeoutMs: 60_000, proxyWriteWaitMs: 5000, queryBudget: { rows: 20_000, bytes: 16 * 1024 * 1024, ms: 2000 } });
});

t.test('--proxy-write-wait takes a duration, 0s included', async (t) => {
  t.equal(servingLimits({ 'proxy-write-wait': '2s' }).proxyWriteWaitMs, 2000);
  t.equal(servingLimits({ 'proxy-write-wait': '250ms' }).proxyWriteWaitMs, 250);
  t.equal(servingLimits({ 'proxy-write-wait': '0s' }).proxyWriteWaitMs, 0, 'no wait');
  t.throws(() => servingLimits({ 'proxy-write-wait': '5' }), UsageError);
  t.throws(() => servingLimits({ 'proxy-write-wait': '-1s' }), /--proxy-write-wait must be a duration/);
});

t.test('the others as before', async (t) => {
  t.same(servingLimits({ 'max-limit': '500', 'request-timeout': '30s' }), { maxLimit: 500, requestTimeoutMs: 30_000, proxyWriteWaitMs: 5000, queryBudget: { rows: 20_000, bytes: 16 * 1024 * 1024, ms: 2000 } });
  t.throws(() => servingLimits({ 'max-limit': '0' }), /--max-limit must be at least 1/);
});
