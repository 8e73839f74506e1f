// Memory gauges read at scrape time, registered once per registry.
import { Registry } from 'prom-client';
import t from 'tap';
import { registerProcessMetrics } from './process-metrics.ts';

t.test('resident memory and heap, once per registry', async (t) => {
  const registry = new Registry();
  registerProcessMetrics(registry);
  registerProcessMetrics(registry);
  const text = await registry.metrics();
  t.equal(text.match(/^# TYPE process_resident_memory_bytes gauge$/gm)?.length, 1, 'registered once');
  const rss = Number(/^process_resident_memory_bytes (\d+)$/m.exec(text)?.[1]);
  t.ok(Math.abs(rss - process.memoryUsage().rss) < 64 * 1024 * 1024, `about the process's RSS (${rss})`);
  const used = Number(/^nodejs_heap_size_used_bytes (\d+)$/m.exec(text)?.[1]);
  const total = Number(/^nodejs_heap_size_total_bytes (\d+)$/m.exec(text)?.[1]);
  t.ok(used > 0 && used <= total, `heap used ${used} of ${total}`);
  t.match(text, /^nodejs_external_memory_bytes \d+$/m);
});

t.test('CPU time as counters that follow process.cpuUsage()', async (t) => {
  const registry = new Registry();
  registerProcessMetrics(registry);
  const read = async (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(await registry.metrics())?.[1]);
  const before = await read('process_cpu_seconds_total');
  const used = process.cpuUsage();
  t.ok(before > 0 && Math.abs(before - (used.user + used.system) / 1e6) < 0.5, `about the process's CPU time (${before} s)`);
  const until = performance.now() + 60;
  while (performance.now() < until) Math.sqrt(Math.random()); // 60 ms of CPU
  const after = await read('process_cpu_seconds_total');
  t.ok(after - before >= 0.03, `it grew with the work done (${((after - before) * 1000).toFixed(0)} ms)`);
  t.ok((await read('process_cpu_user_seconds_total')) + (await read('process_cpu_system_seconds_total')) >= after - 0.05, 'user + system');
});
