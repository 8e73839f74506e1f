// The watch clients of hack/bench/watch-connections.ts, in processes of their own (so that
// their memory and CPU are not the server's): each holds its share of the watches and
// measures each event's delivery latency from the time the writer stamped into the object
// (annotation bench/sent). HTTP/1.1 (plain or TLS): one socket per watch. HTTP/2: streams
// over as few TLS connections as the server's stream limit allows, with the receive windows
// of Go's HTTP/2 transport (what kube-apiserver's aggregator proxies with). Driven over IPC.
import http, { type IncomingMessage } from 'node:http';
import http2, { type ClientHttp2Session } from 'node:http2';
import https from 'node:https';
import { LatencyHistogram, now } from './fanout-workload.ts';

type Msg =
  | { cmd: 'open'; base: string; paths: string[]; headers: Record<string, string>; tls?: { ca: string; cert: string; key: string }; h2?: boolean; concurrency: number }
  | { cmd: 'reset' }
  | { cmd: 'stats' }
  | { cmd: 'exit' };

const send = (m: unknown) => process.send!(m);
const hist = new LatencyHistogram();
let delivered = 0;
let open = 0;
const endedBy: Record<string, number> = {};
const requests: http.ClientRequest[] = [];
const sentAt = /"bench\/sent":"([0-9.]+)"/;

function onLine(line: string): void {
  const m = sentAt.exec(line);
  if (!m) return; // a BOOKMARK
  hist.add(now() - Number(m[1]));
  delivered++;
}

/** Feeds a stream of chunks, line by line, to onLine. */
function lineReader(): (chunk: string) => void {
  let partial = '';
  return (chunk) => {
    const t = partial + chunk;
    let start = 0;
    let nl: number;
    while ((nl = t.indexOf('\n', start)) >= 0) {
      onLine(t.slice(start, nl));
      start = nl + 1;
    }
    partial = start < t.length ? t.slice(start) : '';
  };
}

function ended(why: string): void {
  open--;
  endedBy[why] = (endedBy[why] ?? 0) + 1;
}

// HTTP/2: sessions of up to the server's maxConcurrentStreams streams each.
const sessions: Array<{ session: ClientHttp2Session; streams: number; max: number }> = [];

let connecting: Promise<void> | undefined;

/** A session with room for one more stream (counted as taken), connecting a new one when all are full. */
async function h2session(base: string, tls: { ca: string; cert: string; key: string }): Promise<(typeof sessions)[number]> {
  for (;;) {
    const free = sessions.find((s) => s.streams < s.max && !s.session.destroyed);
    if (free) {
      free.streams++;
      return free;
    }
    if (connecting) {
      await connecting;
      continue;
    }
    connecting = (async () => {
      // Go's transport: 4 MiB per stream, 1 GiB per connection.
      const session = http2.connect(base, { ...tls, settings: { initialWindowSize: 4 << 20 } });
      await new Promise<void>((resolve, reject) => {
        session.once('remoteSettings', () => resolve());
        session.once('error', reject);
      });
      session.setLocalWindowSize(1 << 30);
      session.on('error', () => undefined);
      sessions.push({ session, streams: 0, max: session.remoteSettings.maxConcurrentStreams ?? 100 });
    })().finally(() => (connecting = undefined));
  }
}

async function watchH2(base: string, path: string, headers: Record<string, string>, tls: { ca: string; cert: string; key: string }): Promise<void> {
  const s = await h2session(base, tls);
  await new Promise<void>((resolve, reject) => {
    const stream = s.session.request({ ':path': path, accept: 'application/json', ...Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])) });
    stream.end();
    stream.on('response', (h) => {
      if (h[':status'] !== 200) {
        stream.resume();
        reject(new Error(`${path}: HTTP ${h[':status']}`));
        return;
      }
      open++;
      stream.setEncoding('latin1');
      stream.on('data', lineReader());
      stream.on('end', () => ended('ended by the server'));
      resolve();
    });
    stream.on('close', () => s.streams--);
    stream.on('error', (err) => {
      reject(err);
      ended(err.message);
    });
  });
}

function watch(base: string, path: string, headers: Record<string, string>, agent: http.Agent): Promise<void> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, base);
    const transport = url.protocol === 'https:' ? https : http;
    const req = transport.request(url, { agent, headers: { Accept: 'application/json', ...headers } }, (res: IncomingMessage) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`${path}: HTTP ${res.statusCode}`));
        return;
      }
      open++;
      res.setEncoding('latin1');
      res.on('data', lineReader());
      res.on('end', () => ended('ended by the server'));
      res.on('error', (err) => ended(err.message));
      resolve();
    });
    req.on('error', reject);
    req.end();
    requests.push(req);
  });
}

process.on('message', async (m: Msg) => {
  switch (m.cmd) {
    case 'open': {
      const agent = m.tls
        ? new https.Agent({ keepAlive: false, maxSockets: Infinity, ca: m.tls.ca, cert: m.tls.cert, key: m.tls.key, maxCachedSessions: 100 })
        : new http.Agent({ keepAlive: false, maxSockets: Infinity });
      let failed = 0;
      let firstError = '';
      let next = 0;
      const worker = async () => {
        while (next < m.paths.length) {
          const path = m.paths[next++];
          try {
            if (m.h2) await watchH2(m.base, path, m.headers, m.tls!);
            else await watch(m.base, path, m.headers, agent);
          } catch (err) {
            failed++;
            firstError ||= (err as Error).message;
          }
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, m.concurrency) }, worker));
      send({ ok: 'open', opened: m.paths.length - failed, failed, firstError });
      break;
    }
    case 'reset':
      hist.reset();
      delivered = 0;
      send({ ok: 'reset' });
      break;
    case 'stats':
      send({ ok: 'stats', delivered, open, ended: endedBy, sessions: sessions.length, histogram: hist.toPairs(), max: hist.max });
      break;
    case 'exit':
      for (const r of requests) r.destroy();
      for (const s of sessions) s.session.destroy();
      send({ ok: 'exit' });
      process.exit(0);
  }
});
send({ ok: 'ready' });
