// Stage marks of the write → watch path, for benchmarks (hack/bench/watch.ts prints where the
// time goes from them). Off unless the environment names a file in PANOPTES_TRACE_FILE; then
// each process appends one line per mark, `{"s":stage,"a":fromRv,"b":toRv,"t":ms}`, where t is
// the wall clock in milliseconds with sub-millisecond resolution (performance.timeOrigin +
// performance.now(), comparable across the processes of one machine). Marks are buffered and
// appended every 200 ms and at exit, off the path they measure.
import { appendFileSync } from 'node:fs';

const file = process.env.PANOPTES_TRACE_FILE || undefined;

/** Whether marks are recorded: test it before computing a mark's arguments on a hot path. */
export const tracing = file !== undefined;

/** The wall clock, ms, sub-millisecond: the clock of every mark. */
export const wallNow = (): number => performance.timeOrigin + performance.now();

/** A performance.now() reading as the marks' wall clock. */
export const wallOf = (perfNow: number): number => performance.timeOrigin + perfNow;

let lines: string[] = [];
let timer: NodeJS.Timeout | undefined;

function flush(): void {
  if (!file || lines.length === 0) return;
  const out = lines.join('\n') + '\n';
  lines = [];
  try {
    appendFileSync(file, out);
  } catch {
    // A benchmark's aid: a mark that cannot be written is dropped.
  }
}

if (file) process.on('exit', flush);

/** Records that the changes with rv in [fromRv, toRv] reached `stage` at `t`. */
export function traceMark(stage: string, fromRv: number, toRv: number, t: number = wallNow()): void {
  if (!file) return;
  lines.push(`{"s":"${stage}","a":${fromRv},"b":${toRv},"t":${t.toFixed(3)}}`);
  if (lines.length >= 10_000) flush();
  else if (!timer) {
    timer = setTimeout(() => {
      timer = undefined;
      flush();
    }, 200);
    timer.unref();
  }
}

/** One mark as read back from a trace file. */
export interface TraceMark {
  s: string;
  a: number;
  b: number;
  t: number;
}

/** The first time each rv reached each stage, from the lines of trace files: stage → rv → t. */
export function readMarks(text: string): Map<string, Map<number, number>> {
  const out = new Map<string, Map<number, number>>();
  for (const line of text.split('\n')) {
    if (!line) continue;
    let m: TraceMark;
    try {
      m = JSON.parse(line) as TraceMark;
    } catch {
      continue;
    }
    let byRv = out.get(m.s);
    if (!byRv) out.set(m.s, (byRv = new Map()));
    for (let rv = m.a; rv <= m.b && rv - m.a < 100_000; rv++) {
      const t = byRv.get(rv);
      if (t === undefined || m.t < t) byRv.set(rv, m.t);
    }
  }
  return out;
}
