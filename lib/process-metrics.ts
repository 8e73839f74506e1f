// The process's memory in Prometheus: resident set and the V8 heap, under the names
// prom-client's default metrics use (process_resident_memory_bytes, nodejs_heap_size_*),
// read when scraped. Registered once per registry (all-in-one's two halves share one).
import { readFileSync } from 'node:fs';
import { Gauge, type Registry } from 'prom-client';

/** VmRSS of /proc/self/status where there is one (Linux), else process.memoryUsage().rss. */
function residentBytes(): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // not Linux
  }
  return process.memoryUsage.rss();
}

export function registerProcessMetrics(registry: Registry): void {
  if (registry.getSingleMetric('process_resident_memory_bytes')) return;
  const registers = [registry];
  new Gauge({
    name: 'process_resident_memory_bytes',
    help: 'Resident memory size in bytes.',
    registers,
    collect() {
      this.set(residentBytes());
    },
  });
  const heap = (name: string, help: string, read: (m: NodeJS.MemoryUsage) => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(read(process.memoryUsage()));
      },
    });
  heap('nodejs_heap_size_total_bytes', 'Process heap size from Node.js in bytes.', (m) => m.heapTotal);
  heap('nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.', (m) => m.heapUsed);
  heap('nodejs_external_memory_bytes', 'Node.js external memory size in bytes.', (m) => m.external);
}
