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
