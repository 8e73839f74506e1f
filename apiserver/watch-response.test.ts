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
