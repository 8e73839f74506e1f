// CPU per unit of work, as the benchmarks print it beside their latencies: a Panoptes process's
// own CPU time (process_cpu_seconds_total on its /metrics: every thread of the process, user and
// system), read before and after the work. Latency on a shared machine moves with its load;
// CPU per unit of work moves much less, and it is what an operator pays.
import { request } from 'node:http';

/** process_cpu_seconds_total of the process serving `base` (http://host:port), in ms. */
export function cpuMs(base: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/metrics`, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        const m = /^process_cpu_seconds_total (\S+)$/m.exec(body);
        if (res.statusCode !== 200 || !m) return reject(new Error(`${base}/metrics: no process_cpu_seconds_total (HTTP ${res.statusCode})`));
        resolve(Number(m[1]) * 1000);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** The CPU (ms) the process at `base` spent while `work` ran, less one scrape (measured before). */
export async function cpuDuring<T>(base: string, work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const a = await cpuMs(base);
  const b = await cpuMs(base); // one scrape's own cost
  const value = await work();
  const c = await cpuMs(base);
  return { ms: Math.max(0, c - b - (b - a)), value };
}
