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

/** What is used of Node's response (HTTP/1.1 ServerResponse or HTTP/2 compatibility Http2ServerResponse). */
export interface WatchResponse {
  write(chunk: Buffer): boolean;
  end(): unknown;
  destroy(): unknown;
  on(event: 'drain' | 'close', listener: () => void): unknown;
  once(event: 'close', listener: () => void): unknown;
}

/** Streams `stream` to `res`, whose status and headers are set; `onError` is told of a failed stream before the connection is reset. */
export function pipeWatchResponse(stream: Readable, res: WatchResponse, onError: (err: Error) => void): void {
  stream.on('data', (chunk: Buffer) => {
    if (!res.write(chunk)) stream.pause();
  });
  res.on('drain', () => stream.resume());
  stream.once('end', () => res.end());
  stream.once('error', (err: Error) => {
    onError(err);
    res.destroy();
  });
  res.once('close', () => stream.destroy());
}
