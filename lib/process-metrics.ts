// The process's memory and CPU in Prometheus: resident set, the V8 heap and CPU time (every
// thread of the process), under the names prom-client's default metrics use
// (process_resident_memory_bytes, nodejs_heap_size_*, process_cpu_*_seconds_total), read when
// scraped. Registered once per registry (all-in-one's two halves share one).
import { readFileSync } from 'node:fs';
import { Counter, Gauge, type Registry } from 'prom-client';

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
  // CPU time as counters that follow process.cpuUsage() (microseconds since start).
  const cpu = (name: string, help: string, read: (u: NodeJS.CpuUsage) => number) => {
    let counted = 0;
    return new Counter({
      name,
      help,
      registers,
      collect() {
        const seconds = read(process.cpuUsage()) / 1e6;
        if (seconds > counted) this.inc(seconds - counted);
        counted = Math.max(counted, seconds);
      },
    });
  };
  cpu('process_cpu_user_seconds_total', 'Total user CPU time spent in seconds.', (u) => u.user);
  cpu('process_cpu_system_seconds_total', 'Total system CPU time spent in seconds.', (u) => u.system);
  cpu('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.', (u) => u.user + u.system);
}
