// One request cannot take the apiserver down through the write API: bodies are bounded at
// kube-apiserver's 3 MiB (with and without a Content-Length), nesting at the decoder's
// depth, YAML's expansion, and JSON patches by kube's copy budget and the size and depth of
// the patched object. Every hostile body of hack/testing/patch-bombs.ts gets its 4xx Status
// fast from an apiserver whose heap is held to 256 MB (a worker thread), which then goes on
// serving. Writes in flight at once are bounded too (429).
import { request } from 'node:http';
import t, { type Test } from 'tap';
import { http, type HttpResult } from '../hack/sim/testutil.ts';
import { startApiserverWorker } from '../hack/testing/apiserver-worker.ts';
import { bodyBombs, deepJson, patchBombs, type Bomb } from '../hack/testing/patch-bombs.ts';
import { maxJsonDepth, maxRequestBodyBytes } from '../kube/json-limits.ts';
import { setLogLevel } from '../lib/log.ts';
import { openTestStore } from '../storage/testing.ts';
import { createApiserver } from './server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const C = '/apis/panoptes.io/v1alpha1/clusters';
const MiB = 1024 * 1024;
const tooLarge = { reason: 'RequestEntityTooLarge', code: 413, message: `Request entity too large: limit is ${maxRequestBodyBytes}` };

/** A request whose body is sent chunked (no Content-Length), in pieces of 64 KiB. */
function chunked(method: string, url: string, body: string, contentType = 'application/json'): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { 'Content-Type': contentType, 'Transfer-Encoding': 'chunked' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: JSON.parse(text) });
      });
    });
    const timer = setTimeout(() => req.destroy(new Error('no answer within 15 s')), 15_000);
    req.on('close', () => clearTimeout(timer));
    req.on('error', reject);
    for (let i = 0; i < body.length; i += 64 * 1024) req.write(body.slice(i, i + 64 * 1024));
    req.end();
  });
}

t.test('the write API is bounded', async (t) => {
  const api = await startApiserverWorker(256);
  t.teardown(() => api.close());
  const url = (path: string) => api.base + path;
  const create = (body: unknown, ct = 'application/json') => http('POST', url(C), body, { 'Content-Type': ct });
  t.equal((await create({ metadata: { name: 'east' }, spec: { server: 'https://east.example:6443' } })).status, 201);

  t.test('bodies: 3 MiB as kube-apiserver, with or without a Content-Length', async (t) => {
    const padded = (bytes: number, name: string) => {
      const obj = JSON.stringify({ metadata: { name }, spec: { server: 'https://pad.example' } });
      return obj + ' '.repeat(bytes - obj.length);
    };
    t.equal((await create(padded(maxRequestBodyBytes, 'at-limit'))).status, 201, 'a body of exactly 3 MiB is taken');
    t.match(await create(padded(maxRequestBodyBytes + 1, 'over')), { status: 413, json: tooLarge }, 'one byte more: 413 (Content-Length)');
    t.match(await chunked('POST', url(C), padded(maxRequestBodyBytes + 1, 'over')), { status: 413, json: tooLarge }, 'chunked: 413 once the limit is passed');
    t.match(await chunked('PATCH', url(`${C}/east`), `{"x":"${'a'.repeat(4 * MiB)}"}`, 'application/merge-patch+json'), { status: 413, json: tooLarge }, 'a chunked patch');
    t.match(await chunked('DELETE', url(`${C}/east`), `{"x":"${'a'.repeat(4 * MiB)}"}`), { status: 413, json: tooLarge }, 'a chunked DeleteOptions');
    t.equal((await http('GET', url(`${C}/east`))).status, 200, 'nothing was deleted');
  });

  t.test(`nesting: ${maxJsonDepth} levels at most, Go's encoding/json words beyond`, async (t) => {
    // {"metadata":…,"spec":…,"x":<value>}: the object itself is one level.
    const atLimit = `{"metadata":{"name":"deep-ok"},"spec":{"server":"https://d.example"},"x":${deepJson(maxJsonDepth - 1)}}`;
    const r = await create(atLimit);
    t.equal(r.status, 201, `${maxJsonDepth} levels are decoded (and the unknown field dropped)`);
    const over = `{"metadata":{"name":"deep"},"spec":{"server":"https://d.example"},"x":${deepJson(maxJsonDepth)}}`;
    t.match(await create(over), {
      status: 400,
      json: { reason: 'BadRequest', message: `the object provided is unrecognized (must be of type Cluster): couldn't get version/kind; json parse error: invalid character '{' exceeded max depth` },
    });
    const cur = (await http('GET', url(`${C}/east`))).json;
    const put = await http('PUT', url(`${C}/east`), JSON.stringify({ ...cur, x: 0 }).replace('"x":0', `"x":${deepJson(8000, 'array')}`));
    t.match(put, { status: 400, json: { reason: 'BadRequest', message: /json parse error: invalid character '\[' exceeded max depth$/ } }, 'update');
    const del = await http('DELETE', url(`${C}/east`), `{"preconditions":${deepJson(8000)}}`);
    t.match(del, { status: 400, json: { reason: 'BadRequest', message: /could not be decoded as DeleteOptions: invalid character '\{' exceeded max depth$/ } }, 'DeleteOptions');
    for (const [ct, body] of [
      ['application/merge-patch+json', `{"x":${deepJson(8000)}}`],
      ['application/json-patch+json', `[{"op":"add","path":"/x","value":${deepJson(8000)}}]`],
    ]) {
      t.match(await http('PATCH', url(`${C}/east`), body, { 'Content-Type': ct }), { status: 400, json: { reason: 'BadRequest', message: "error decoding patch: invalid character '{' exceeded max depth" } }, ct);
    }
    t.match(await create(`metadata: {name: y}\nx: ${'['.repeat(maxJsonDepth + 1)}${']'.repeat(maxJsonDepth + 1)}\n`, 'application/yaml'), { status: 400, json: { reason: 'BadRequest', message: /error converting YAML to JSON/ } }, 'YAML');
  });

  const send = async (b: Bomb, path: string) => {
    const method = b.contentType.endsWith('patch+json') ? 'PATCH' : 'POST';
    const started = Date.now();
    const r = await http(method, url(path), b.body, { 'Content-Type': b.contentType });
    return { r, ms: Date.now() - started };
  };
  const check = (t: Test, b: Bomb, r: HttpResult, ms: number) => {
    // How long it took is reported, not asserted (a busy machine stretches it): the bounds are
    // the Status, the heap and the apiserver still running; a hang ends in the file's timeout.
    t.equal(r.status, b.expect.code, `${b.name}: ${r.status} in ${ms} ms ${r.text.slice(0, 200)}`);
    if (b.expect.reason) t.match(r.json, { kind: 'Status', reason: b.expect.reason, code: b.expect.code }, `${b.name}: a Status`);
    t.notOk(api.exited(), `${b.name}: the apiserver is still running`);
  };

  t.test('patch bombs: a 4xx Status each, within the heap', async (t) => {
    for (const b of patchBombs()) {
      const { r, ms } = await send(b, `${C}/east`);
      check(t, b, r, ms);
    }
    const after = await http('PATCH', url(`${C}/east`), { metadata: { labels: { survived: 'yes' } } }, { 'Content-Type': 'application/merge-patch+json' });
    t.equal(after.status, 200, 'then a patch is served as before');
    t.same(after.json.metadata.labels, { survived: 'yes' });
    t.equal(after.json.x, undefined, 'and no bomb left anything behind');
  });

  t.test('body bombs: create', async (t) => {
    for (const b of bodyBombs()) {
      const { r, ms } = await send(b, C);
      check(t, b, r, ms);
    }
  });

  t.test('the apiserver goes on serving', async (t) => {
    t.equal((await http('GET', url('/readyz'))).status, 200);
    t.equal((await http('GET', url(C))).status, 200);
    const heap = await api.heapUsed();
    t.ok(heap < 200 * MiB, `heap in use after the bombs: ${Math.round(heap / MiB)} MiB`);
  });
});

t.test('writes in flight are bounded (429 beyond, as kube-apiserver answers); reads are not', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  const api = await createApiserver({ store, limits: { maxMutatingInFlight: 2 } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    await close();
  });
  // Two creates whose bodies are still arriving hold both places.
  const slow = [0, 1].map((i) => {
    let res: (r: number) => void = () => undefined;
    const answered = new Promise<number>((r) => (res = r));
    const req = request(`${base}${C}`, { method: 'POST', agent: false, headers: { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' } }, (r) => {
      r.resume();
      r.on('end', () => res(r.statusCode ?? 0));
    });
    req.on('error', () => res(-1));
    req.write(`{"metadata":{"name":"slow-${i}"},`);
    return { req, answered };
  });
  const deadline = Date.now() + 5000;
  let third: HttpResult | undefined;
  while (Date.now() < deadline) {
    third = await http('POST', `${base}${C}`, { metadata: { name: 'third' }, spec: { server: 'https://third.example' } });
    if (third.status === 429) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  t.match(third, { status: 429, headers: { 'retry-after': '1' }, json: { kind: 'Status', reason: 'TooManyRequests', code: 429, message: 'Too many requests, please try again later.' } });
  t.equal((await http('GET', `${base}${C}`)).status, 200, 'reads go on');
  for (const s of slow) s.req.end('"spec":{"server":"https://slow.example"}}');
  t.same(await Promise.all(slow.map((s) => s.answered)), [201, 201]);
  t.equal((await http('POST', `${base}${C}`, { metadata: { name: 'third' }, spec: { server: 'https://third.example' } })).status, 201, 'then writes are taken again');
});
