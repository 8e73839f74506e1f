// Test helpers for watches over HTTP: a streaming reader that keeps the raw bytes and the
// parsed events, with bounded waits.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';

export interface HttpWatchEvent {
  type: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  object: any;
}

export interface HttpWatch {
  status: number;
  headers: IncomingHttpHeaders;
  /** Everything received, as text. */
  raw(): string;
  events: HttpWatchEvent[];
  /** True once the server ended the stream cleanly (false: reset or still open). */
  ended: boolean;
  /** Resolves true when the stream ended cleanly, false when it was reset. */
  done: Promise<boolean>;
  /** Waits for `pred` (bounded); rejects with what arrived. */
  until(pred: (w: HttpWatch) => boolean, ms?: number, what?: string): Promise<void>;
  /** Pauses / resumes reading from the socket (a slow client). */
  pause(): void;
  resume(): void;
  close(): void;
}

/** Opens a watch request; resolves once the response headers arrived (bounded: 10 s). */
export function httpWatch(url: string, headers: Record<string, string> = {}, opts: { paused?: boolean } = {}): Promise<HttpWatch> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers, agent: false }, (res) => {
      clearTimeout(timer);
      const chunks: Buffer[] = [];
      let partial = '';
      let listeners: Array<() => void> = [];
      const notify = () => {
        const l = listeners;
        listeners = [];
        for (const f of l) f();
      };
      let doneResolve: (v: boolean) => void = () => undefined;
      const done = new Promise<boolean>((r) => (doneResolve = r));
      const w: HttpWatch = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        raw: () => Buffer.concat(chunks).toString('utf8'),
        events: [],
        ended: false,
        done,
        until(pred, ms = 5000, what = 'condition') {
          const deadline = Date.now() + ms;
          return new Promise<void>((ok, fail) => {
            const check = () => {
              if (pred(w)) return ok();
              if (Date.now() >= deadline) {
                return fail(new Error(`timed out after ${ms} ms waiting for ${what}; ended=${w.ended}; ${w.events.length} events: ${w.events.slice(-8).map((e) => `${e.type}@${e.object?.metadata?.resourceVersion}`).join(' ')}`));
              }
              const t = setTimeout(check, Math.min(100, Math.max(1, deadline - Date.now())));
              listeners.push(() => {
                clearTimeout(t);
                check();
              });
            };
            check();
          });
        },
        pause: () => res.pause(),
        resume: () => res.resume(),
        close: () => req.destroy(),
      };
      res.on('data', (b: Buffer) => {
        chunks.push(b);
        partial += b.toString('utf8');
        let nl: number;
        while ((nl = partial.indexOf('\n')) >= 0) {
          const line = partial.slice(0, nl);
          partial = partial.slice(nl + 1);
          if (line.trim() !== '') w.events.push(JSON.parse(line) as HttpWatchEvent);
        }
        notify();
      });
      res.on('end', () => {
        w.ended = true;
        doneResolve(true);
        notify();
      });
      res.on('aborted', () => doneResolve(false));
      res.on('error', () => doneResolve(false));
      res.on('close', () => {
        doneResolve(w.ended);
        notify();
      });
      if (opts.paused) res.pause();
      resolve(w);
    });
    const timer = setTimeout(() => req.destroy(new Error(`no response headers within 10 s: ${url}`)), 10_000);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end();
  });
}

export const rvOf = (e: HttpWatchEvent): number => Number(e.object?.metadata?.resourceVersion ?? 0);
