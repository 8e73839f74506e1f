// A watch's stream written to the response outside Koa: bytes in order, backpressure both
// ways, the stream destroyed when the client goes, the response ended or reset with it.
import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import t from 'tap';
import { pipeWatchResponse, type WatchResponse } from './watch-response.ts';

/** A response that takes `room` writes before it asks the writer to wait for 'drain'. */
class FakeResponse extends EventEmitter implements WatchResponse {
  written: string[] = [];
  ended = false;
  destroyed = false;
  constructor(public room = Infinity) {
    super();
  }
  write(chunk: Buffer): boolean {
    this.written.push(chunk.toString());
    return this.written.length < this.room;
  }
  end(): void {
    this.ended = true;
  }
  destroy(): void {
    this.destroyed = true;
    this.emit('close');
  }
}

const tick = () => new Promise<void>((r) => setImmediate(r));

t.test('every chunk in order, then the response ends with the stream', async (t) => {
  const res = new FakeResponse();
  pipeWatchResponse(Readable.from([Buffer.from('a\n'), Buffer.from('b\n')], { objectMode: false }), res, () => t.fail('no error'));
  for (let i = 0; i < 10 && !res.ended; i++) await tick();
  t.same(res.written, ['a\n', 'b\n']);
  t.ok(res.ended);
});

t.test('a full response pauses the stream until it drains', async (t) => {
  const res = new FakeResponse(1);
  const stream = new Readable({ read() {} });
  pipeWatchResponse(stream, res, () => t.fail('no error'));
  stream.push(Buffer.from('1\n'));
  stream.push(Buffer.from('2\n'));
  await tick();
  t.same(res.written, ['1\n'], 'one chunk, then the write asked to wait');
  t.ok(stream.isPaused());
  res.room = Infinity;
  res.emit('drain');
  await tick();
  t.same(res.written, ['1\n', '2\n'], 'the rest after drain');
  t.notOk(stream.isPaused());
});

t.test('the client going destroys the stream (the watcher unregisters)', async (t) => {
  const res = new FakeResponse();
  let destroyed = false;
  const stream = new Readable({
    read() {},
    destroy(err, cb) {
      destroyed = true;
      cb(err);
    },
  });
  pipeWatchResponse(stream, res, () => t.fail('no error'));
  res.emit('close');
  await tick();
  t.ok(destroyed);
  t.notOk(res.ended);
});

t.test('a failed stream is reported and the response reset', async (t) => {
  const res = new FakeResponse();
  const stream = new Readable({ read() {} });
  const errors: Error[] = [];
  pipeWatchResponse(stream, res, (err) => errors.push(err));
  stream.destroy(new Error('boom'));
  await tick();
  t.same(errors.map((e) => e.message), ['boom']);
  t.ok(res.destroyed);
  t.notOk(res.ended);
});

t.test('a chunk leaves over HTTP/1.1 at once, not once every queued microtask has run (Node uncorks on the next tick)', async (t) => {
  const { createServer, request } = await import('node:http');
  const stream = new Readable({ read() {} });
  let socket: import('node:net').Socket | undefined;
  const server = createServer((req, res) => {
    socket = req.socket;
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.flushHeaders();
    pipeWatchResponse(stream, res, () => t.fail('no error'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as { port: number }).port;
  const got: string[] = [];
  const req = request({ host: '127.0.0.1', port, path: '/' }, (res) => {
    res.setEncoding('utf8');
    res.on('data', (c: string) => got.push(c));
  });
  req.end();
  t.teardown(() => req.destroy());
  for (let i = 0; i < 200 && !socket; i++) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 20));
  // A chain of microtasks, as a synchronous storage driver's promises make one: the chunk pushed
  // at its start is handed to the kernel before the chain ends.
  let flushedAt = -1;
  let steps = 0;
  stream.push(Buffer.from('{"type":"ADDED"}\n'));
  for (; steps < 10_000; steps++) {
    await Promise.resolve();
    if (flushedAt < 0 && socket!.writableCorked === 0 && socket!.writableLength === 0) flushedAt = steps;
  }
  t.ok(flushedAt >= 0 && flushedAt < 10, `on the socket after ${flushedAt} of ${steps} microtasks`);
  // The watch engine's 'flush' (its dispatch is over) writes at once, before any microtask.
  stream.push(Buffer.from('{"type":"MODIFIED"}\n'));
  t.equal(socket!.writableCorked, 1, 'corked by Node after the write');
  stream.emit('flush');
  t.ok(socket!.writableCorked === 0 && socket!.writableLength === 0, "on the socket at the engine's flush");
  for (let i = 0; i < 200 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
  t.same(got.join(''), '{"type":"ADDED"}\n{"type":"MODIFIED"}\n');
  stream.push(null);
});
