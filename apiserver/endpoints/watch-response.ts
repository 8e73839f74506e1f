// A watch's response, written outside Koa: once a watch is routed, authorized and its stream
// made, its bytes go straight from the watcher's Readable to Node's response object (HTTP/1.1
// or HTTP/2) instead of through Koa's body handling. A watch lives for minutes and there are
// thousands at once, so what it holds matters: Koa would pipe the body with
// `stream.pipeline` (finished-listeners on both streams, a destroyer per side) and register
// another finish listener to destroy it; here it is four listeners and one closure context
// per watch. The behaviour is the same: backpressure (the watcher's own bounded queue fills
// while the socket is slow), the stream destroyed when the client goes (the watcher
// unregisters), the response ended when the stream ends.
import type { Readable } from 'node:stream';
import { traceMark, tracing } from '../../lib/trace.ts';
import { rvOfBytes } from '../watch/encode.ts';

/** What is used of Node's response (HTTP/1.1 ServerResponse or HTTP/2 compatibility Http2ServerResponse). */
export interface WatchResponse {
  write(chunk: Buffer): boolean;
  end(): unknown;
  destroy(): unknown;
  on(event: 'drain' | 'close', listener: () => void): unknown;
  once(event: 'close', listener: () => void): unknown;
  /** HTTP/1.1: the connection, which Node corks while a chunk is written. */
  readonly socket?: { readonly writableCorked: number; uncork(): void } | null;
}

/**
 * Streams `stream` to `res`, whose status and headers are set; `onError` is told of a failed stream before the connection is reset.
 *
 * Node's HTTP/1.1 response corks its socket on a write and uncorks it on the next tick, which
 * comes only once every queued microtask has run: in a process whose storage driver answers
 * synchronously (better-sqlite3), a whole write transaction of synchro's ran first, 1.2 ms at
 * the median (bench:watch's `dispatched -> written`). So the socket is uncorked when the watch
 * engine's dispatch is over (the watcher's 'flush': the events of one dispatch go out in one
 * write), and for what else is sent (a replay, a bookmark) in a microtask queued at its first
 * chunk.
 */
export function pipeWatchResponse(stream: Readable, res: WatchResponse, onError: (err: Error) => void): void {
  let flushQueued = false;
  let written: number[] = [];
  const flush = () => {
    const socket = res.socket;
    if (socket && socket.writableCorked > 0) socket.uncork();
    if (tracing) {
      for (const rv of written) traceMark('written', rv, rv);
      written = [];
    }
  };
  // The watch engine's dispatch is over (apiserver/watch/watcher.ts flush): written now.
  stream.on('flush', flush);
  stream.on('data', (chunk: Buffer) => {
    if (!res.write(chunk)) stream.pause();
    if (tracing) {
      const rv = rvOfBytes.get(chunk);
      if (rv !== undefined) written.push(rv);
    }
    if (!flushQueued) {
      flushQueued = true;
      queueMicrotask(() => {
        flushQueued = false;
        flush();
      });
    }
  });
  res.on('drain', () => stream.resume());
  stream.once('end', () => res.end());
  stream.once('error', (err: Error) => {
    onError(err);
    res.destroy();
  });
  res.once('close', () => stream.destroy());
}
