// What Panoptes holds of a member's answer: a JSON answer, a watch event and an error body are
// each bounded, so that a hostile or broken member (an endless body, an endless line) costs a
// bounded amount of memory, and the newlines of a watch are found in one pass over its bytes.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import t, { type Test } from 'tap';
import { AnswerTooLargeError, lines, maxAnswerBytes, maxErrorBodyBytes, maxEventBytes, readBounded } from './answer-size.ts';
import { connectCluster, HttpError } from './client.ts';

const MiB = 1024 * 1024;

async function collect(gen: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const l of gen) out.push(l);
  return out;
}

t.test('lines: split across chunks, multi-byte characters cut between chunks, no newline at the end', async (t) => {
  const text = Buffer.from('{"a":"é"}\n{"b":"日本"}\n\n{"c":1}\n{"partial"');
  const chunks = [text.subarray(0, 7), text.subarray(7, 15), text.subarray(15, 16), text.subarray(16)];
  t.same(await collect(lines(Readable.from(chunks), 1024)), ['{"a":"é"}', '{"b":"日本"}', '', '{"c":1}'], 'the last line without its newline is no line');
  let seen = 0;
  await collect(lines(Readable.from(chunks), 1024, () => seen++));
  t.equal(seen, chunks.length, 'onChunk on every chunk');
});

t.test('lines: a line past the bound is an AnswerTooLargeError, whether or not its newline came', async (t) => {
  await t.rejects(collect(lines(Readable.from([Buffer.alloc(600, 'x'), Buffer.alloc(600, 'x')]), 1000)), AnswerTooLargeError, 'no newline yet');
  await t.rejects(collect(lines(Readable.from([Buffer.alloc(600, 'x'), Buffer.from(`${'x'.repeat(500)}\n`)]), 1000)), AnswerTooLargeError, 'newline in the chunk that passes it');
  t.same(await collect(lines(Readable.from([Buffer.from(`${'x'.repeat(1000)}\n${'y'.repeat(1000)}\n`)]), 1000)), ['x'.repeat(1000), 'y'.repeat(1000)], 'lines at the bound pass');
});

t.test('lines: one long line in many small chunks, assembled whole', async (t) => {
  const chunk = Buffer.alloc(1024, 'x');
  async function* body() {
    for (let i = 0; i < 8 * 1024; i++) yield chunk;
    yield Buffer.from('\nnext\n');
  }
  const got = await collect(lines(body(), 16 * MiB));
  t.same(got.map((l) => l.length), [8 * MiB, 4]);
});

t.test('readBounded: past the bound, an error or the first bytes', async (t) => {
  const s = () => Object.assign(Readable.from([Buffer.alloc(700), Buffer.alloc(700)]), {});
  await t.rejects(readBounded(s(), 1000), AnswerTooLargeError);
  t.equal((await readBounded(s(), 1000, { truncate: true })).length, 1000);
  t.equal((await readBounded(s(), 1400)).length, 1400, 'at the bound');
});

/** A member answering every request with `status` and a body of up to twice maxAnswerBytes (with `line`, the start of a watch event, never ended), counting what it sent. */
async function endlessMember(t: Test, status: number, line: boolean) {
  const sent = { bytes: 0, closed: false };
  const srv = createServer((_req, res: ServerResponse) => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    const piece = Buffer.alloc(1 * MiB, 'x');
    if (line) res.write('{"type":"ADDED","object":{"metadata":{"name":"');
    const pump = () => {
      while (!res.destroyed && sent.bytes < 2 * maxAnswerBytes) {
        sent.bytes += piece.length;
        if (!res.write(piece)) return void res.once('drain', pump);
      }
      res.end();
    };
    res.on('close', () => (sent.closed = true));
    pump();
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => srv.close(() => r())));
  srv.on('connection', (s) => t.teardown(() => s.destroy()));
  const client = await connectCluster({ server: `http://127.0.0.1:${(srv.address() as AddressInfo).port}` });
  t.teardown(() => client.close());
  return { client, sent };
}

t.test('a member that answers a list with an endless body: an AnswerTooLargeError once the bound is read, the connection cut', async (t) => {
  const { client, sent } = await endlessMember(t, 200, false);
  const err = await client.get('/api/v1/configmaps?limit=500').catch((e: unknown) => e);
  t.ok(err instanceof AnswerTooLargeError, String(err));
  t.match(String((err as Error).message), /larger than 256 MiB/);
  t.ok(sent.bytes <= maxAnswerBytes + 64 * MiB, `the member sent ${Math.round(sent.bytes / MiB)} MiB before it was cut`);
});

t.test('a member whose error has an endless body: the HTTP status, after reading its first bytes only', async (t) => {
  const { client, sent } = await endlessMember(t, 500, false);
  const err = await client.get('/api/v1/configmaps').catch((e: unknown) => e);
  t.ok(err instanceof HttpError && err.status === 500, String(err));
  t.ok(sent.bytes < 64 * MiB, `the member sent ${Math.round(sent.bytes / MiB)} MiB (Panoptes reads ${maxErrorBodyBytes} bytes of an error)`);
});

t.test('a member that sends an endless watch event: an AnswerTooLargeError once the bound is read', async (t) => {
  const { client, sent } = await endlessMember(t, 200, true);
  const res = await client.stream('/api/v1/configmaps?watch=1');
  await t.rejects(collect(lines(res, maxEventBytes)), AnswerTooLargeError);
  res.destroy();
  t.ok(sent.bytes <= maxEventBytes + 64 * MiB, `the member sent ${Math.round(sent.bytes / MiB)} MiB before it was cut`);
});

