// CPU per unit of work, as the benchmarks print it beside their latencies: a Panoptes process's
// own CPU time (process_cpu_seconds_total on its /metrics: every thread of the process, user and
// system), read before and after the work. Latency on a shared machine moves with its load;
// CPU per unit of work moves much less, and it is what an operator pays.
import { readdirSync, readFileSync } from 'node:fs';
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

/** CPU seconds of the PostgreSQL instance whose postmaster has `pid`: it, its children, and those that exited. */
export function instanceCpuSeconds(pid: number): number {
  const tick = 100; // USER_HZ on Linux
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // Fields after the command (which may hold spaces) in parentheses: utime, stime at 11, 12;
    // cutime, cstime (children waited for: backends that have exited) at 13, 14.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ppid = Number(f[1]);
    if (Number(entry) === pid) total += (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / tick;
    else if (ppid === pid) total += (Number(f[11]) + Number(f[12])) / tick;
  }
  return total;
}

/** The pid of the postmaster of the PostgreSQL instance serving the backend `backendPid` (its parent). */
export function postmasterOf(backendPid: number): number {
  const stat = readFileSync(`/proc/${backendPid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}
