// Response compression over real HTTP, as kube-apiserver does it (apiserver/endpoints/compression.ts):
// large lists gzipped when Accept-Encoding asks for gzip, byte for byte the same JSON once
// inflated; small answers, watches, v3 OpenAPI and errors never; OpenAPI v2 as kube-openapi's
// gziphandler; and the real kubectl and @kubernetes/client-node reading gzipped lists.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import t from 'tap';
import { writeKubeconfig } from '../../cli/commands/kubeconfig.ts';
import { realisticConfigMap } from '../../hack/fixtures.ts';
import { prng } from '../../hack/testing/prng.ts';
import { setLogLevel } from '../../lib/log.ts';
import { openTestStore, seedCluster } from '../../storage/testing.ts';
import type { UpstreamEvent } from '../../storage/types.ts';
import { apiObjectThresholdBytes, encodeReply, gzipQualityAbove0, hasGzipToken, openapiV2MinBytes } from './compression.ts';
import { createApiserver } from '../server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const P = '/apis/panoptes.io/v1alpha1/resources';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';
const configMaps = 600;

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** One request, the body as it came over the wire (not inflated). */
function raw(url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error(`timeout: ${url}`)));
    req.on('error', reject);
    req.end();
  });
}

const vary = (r: Raw) =>
  String(r.headers.vary ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

t.test('which Accept-Encoding values ask for gzip, on each of kube’s paths', async (t) => {
  t.ok(hasGzipToken('gzip'));
  t.ok(hasGzipToken('gzip,deflate'), 'node-fetch (client-node)');
  t.ok(hasGzipToken('deflate, gzip, br'));
  t.notOk(hasGzipToken('gzip;q=0'), 'SerializeObject compares the whole token');
  t.notOk(hasGzipToken('gzip;q=1'), 'a q-value makes it another token for kube, too');
  t.notOk(hasGzipToken('GZIP'));
  t.notOk(hasGzipToken('*'));
  t.notOk(hasGzipToken('identity'));
  t.notOk(hasGzipToken(''));
  t.ok(gzipQualityAbove0('gzip'));
  t.ok(gzipQualityAbove0('deflate, GZIP;q=0.5'));
  t.notOk(gzipQualityAbove0('gzip;q=0'));
  t.notOk(gzipQualityAbove0('br'));
  const atThreshold = 'x'.repeat(apiObjectThresholdBytes);
  t.equal((await encodeReply('api-object', 'gzip', atThreshold)).contentEncoding, undefined, '128 KiB exactly: not above the threshold');
  t.equal((await encodeReply('api-object', 'gzip', `${atThreshold}x`)).contentEncoding, 'gzip', 'one byte more');
  t.equal((await encodeReply('openapi-v2', 'gzip', 'x'.repeat(openapiV2MinBytes))).contentEncoding, 'gzip', 'gziphandler: at its minimum size');
  t.same(await encodeReply('openapi-v2', 'gzip', 'x'.repeat(openapiV2MinBytes - 1)), { body: 'x'.repeat(openapiV2MinBytes - 1), vary: true });
  t.same(await encodeReply('never', 'gzip', atThreshold + atThreshold), { body: atThreshold + atThreshold, vary: false });
});

t.test('compression over HTTP', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  await seedCluster(store, 'a', {
    phase: 'Ready',
    ready: true,
    apiResources: [{ group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true, singularName: 'configmap', shortNames: ['cm'] }],
  });
  const rand = prng(7);
  const events: UpstreamEvent[] = [];
  for (let i = 0; i < configMaps; i++) events.push(realisticConfigMap(i, rand));
  await store.applyBatch('a', events);
  const api = await createApiserver({ store, catalogOptions: { refreshMs: 100 } });
  const base = await api.listen('127.0.0.1', 0);
  const written = { bytes: 0 };
  const open = new Set<Socket>();
  api.server!.on('connection', (s: Socket) => {
    open.add(s);
    s.on('close', () => {
      written.bytes += s.bytesWritten;
      open.delete(s);
    });
  });
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-gzip-'));
  t.teardown(async () => {
    await api.close();
    await close();
    rmSync(dir, { recursive: true, force: true });
  });
  const list = `${base}${P}/api/v1/configmaps`;
  const plainBytes = (await raw(list)).body.length;
  /** What the server wrote to the connections `fn` opened (every other one is closed first). */
  const onTheWire = async <R>(fn: () => Promise<R>): Promise<{ result: R; sent: number }> => {
    const settle = async () => {
      for (const s of open) s.destroy();
      for (let i = 0; i < 250 && open.size > 0; i++) await new Promise((r) => setTimeout(r, 20));
    };
    await settle();
    const before = written.bytes;
    const result = await fn();
    await settle();
    return { result, sent: written.bytes - before };
  };

  t.test('a large list: gzip when asked, the same JSON once inflated, Content-Length of what is sent', async (t) => {
    const plain = await raw(list);
    const zipped = await raw(list, { 'Accept-Encoding': 'gzip' });
    t.equal(plain.status, 200);
    t.ok(plain.body.length > apiObjectThresholdBytes, `the list is above the threshold (${plain.body.length} bytes)`);
    t.equal(JSON.parse(plain.body.toString()).items.length, configMaps);
    t.equal(plain.headers['content-encoding'], undefined, 'not asked: never');
    t.notOk(vary(plain).includes('Accept-Encoding'));
    t.equal(zipped.status, 200);
    t.equal(zipped.headers['content-encoding'], 'gzip');
    t.ok(vary(zipped).includes('Accept-Encoding'), 'Vary: Accept-Encoding');
    t.equal(zipped.headers['content-type'], plain.headers['content-type']);
    t.equal(Number(zipped.headers['content-length']), zipped.body.length, 'Content-Length is the compressed length');
    t.ok(zipped.body.length < plain.body.length / 2, `compressed ${plain.body.length} -> ${zipped.body.length} bytes`);
    t.ok(gunzipSync(zipped.body).equals(plain.body), 'inflates to the same bytes');

    const node = await raw(list, { 'Accept-Encoding': 'gzip,deflate' });
    t.equal(node.headers['content-encoding'], 'gzip', "node-fetch's header");
    for (const ae of ['gzip;q=0', 'identity', 'br', 'deflate']) {
      const r = await raw(list, { 'Accept-Encoding': ae });
      t.equal(r.headers['content-encoding'], undefined, `${ae}: not compressed`);
      t.ok(r.body.equals(plain.body), `${ae}: the plain body`);
    }
  });

  t.test('small answers are not compressed', async (t) => {
    const page = await raw(`${list}?limit=5`, { 'Accept-Encoding': 'gzip' });
    t.equal(page.status, 200);
    t.equal(page.headers['content-encoding'], undefined);
    t.notOk(vary(page).includes('Accept-Encoding'));
    t.equal(JSON.parse(page.body.toString()).items.length, 5);
    const one = await raw(`${base}${P}/api/v1/namespaces/bench-0/configmaps/app-0-config-00000`, { 'Accept-Encoding': 'gzip' });
    t.equal(one.status, 200);
    t.equal(one.headers['content-encoding'], undefined, 'a get');
    const disc = await raw(`${base}${P}/apis`, { 'Accept-Encoding': 'gzip', Accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' });
    t.equal(disc.status, 200);
    t.equal(disc.headers['content-encoding'], undefined, 'discovery below 128 KiB');
  });

  t.test('Table and PartialObjectMetadataList take the same path', async (t) => {
    const plain = await raw(list, { Accept: TABLE });
    const zipped = await raw(list, { Accept: TABLE, 'Accept-Encoding': 'gzip' });
    t.ok(plain.body.length > apiObjectThresholdBytes, `Table ${plain.body.length} bytes`);
    t.equal(zipped.headers['content-encoding'], 'gzip');
    t.equal(zipped.headers['content-type'], plain.headers['content-type']);
    t.same(JSON.parse(gunzipSync(zipped.body).toString()).rows.length, configMaps);
    const partial = await raw(list, { Accept: 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io', 'Accept-Encoding': 'gzip' });
    const items = JSON.parse((partial.headers['content-encoding'] === 'gzip' ? gunzipSync(partial.body) : partial.body).toString()).items;
    t.equal(items.length, configMaps, 'PartialObjectMetadataList readable either way');
  });

  t.test('HEAD: the headers GET would send, no body', async (t) => {
    const get = await raw(list, { 'Accept-Encoding': 'gzip' });
    const head = await raw(list, { 'Accept-Encoding': 'gzip' }, 'HEAD');
    t.equal(head.status, 200);
    t.equal(head.body.length, 0);
    t.equal(head.headers['content-encoding'], 'gzip');
    t.equal(head.headers['content-length'], get.headers['content-length']);
  });

  t.test('errors stay plain, readable Status', async (t) => {
    const r = await raw(`${base}${P}/api/v1/namespaces/bench-0/configmaps/nope`, { 'Accept-Encoding': 'gzip' });
    t.equal(r.status, 404);
    t.equal(r.headers['content-encoding'], undefined);
    t.match(JSON.parse(r.body.toString()), { kind: 'Status', reason: 'NotFound' });
  });

  t.test('watch streams are never compressed (as kube-apiserver)', async (t) => {
    const r = await raw(`${list}?watch=1&timeoutSeconds=1`, { 'Accept-Encoding': 'gzip' });
    t.equal(r.status, 200);
    t.equal(r.headers['content-encoding'], undefined);
    const lines = r.body.toString().split('\n').filter(Boolean);
    t.equal(lines.length, configMaps, 'every ADDED event as a plain JSON line');
    t.equal(JSON.parse(lines[0]).type, 'ADDED');
  });

  t.test('OpenAPI: v2 as gziphandler, v3 never; ETag and 304 unchanged', async (t) => {
    const v2 = `${base}/openapi/v2`;
    const plain = await raw(v2);
    t.equal(plain.status, 200);
    t.ok(plain.body.length >= openapiV2MinBytes);
    t.same(vary(plain), ['Accept', 'Accept-Encoding'], 'gziphandler varies on Accept-Encoding always');
    t.equal(plain.headers['content-encoding'], undefined);
    const zipped = await raw(v2, { 'Accept-Encoding': 'gzip' });
    t.equal(zipped.headers['content-encoding'], 'gzip');
    t.equal(zipped.headers.etag, plain.headers.etag, 'the same ETag');
    t.ok(gunzipSync(zipped.body).equals(plain.body));
    const proto = await raw(v2, { 'Accept-Encoding': 'gzip', Accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' });
    t.equal(proto.headers['content-encoding'], 'gzip', 'the protobuf kubectl validates with');
    const notModified = await raw(v2, { 'Accept-Encoding': 'gzip', 'If-None-Match': String(plain.headers.etag) });
    t.equal(notModified.status, 304);
    t.equal(notModified.headers['content-encoding'], undefined);
    t.equal(notModified.body.length, 0);
    const root = JSON.parse((await raw(`${base}/openapi/v3`)).body.toString()) as { paths: Record<string, { serverRelativeURL: string }> };
    const doc = await raw(`${base}${root.paths['apis/panoptes.io/v1alpha1'].serverRelativeURL}`, { 'Accept-Encoding': 'gzip' });
    t.equal(doc.status, 200);
    t.equal(doc.headers['content-encoding'], undefined, 'kube-openapi handler3 does not compress');
    t.notOk(vary(doc).includes('Accept-Encoding'));
  });

  t.test('@kubernetes/client-node reads a gzipped list', async (t) => {
    const kc = new KubeConfig();
    kc.loadFromOptions({ clusters: [{ name: 'p', server: `${base}${P}`, skipTLSVerify: true }], users: [{ name: 'u' }], contexts: [{ name: 'p', cluster: 'p', user: 'u' }], currentContext: 'p' });
    const { result: all, sent } = await onTheWire(() => kc.makeApiClient(CoreV1Api).listConfigMapForAllNamespaces());
    t.equal(all.items.length, configMaps);
    t.equal(all.items[599].data?.['client.key'].length, 320);
    t.ok(sent < plainBytes / 2, `client-node: ${sent} bytes on the wire for a ${plainBytes}-byte list`);
  });

  t.test('kubectl reads gzipped lists (Go asks for gzip by itself)', async (t) => {
    const kubeconfig = join(dir, 'kubeconfig');
    await writeKubeconfig(kubeconfig, { panoptes: { server: base, clusters: ['a'] } });
    const kubectl = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'cache'), ...args], { timeout: 60_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) =>
          resolve({ code: err ? 1 : 0, stdout, stderr }),
        );
      });
    const { result: r, sent } = await onTheWire(() => kubectl(['get', '--raw', `${P}/api/v1/configmaps`]));
    t.equal(r.code, 0, r.stderr);
    t.equal(JSON.parse(r.stdout).items.length, configMaps);
    t.ok(sent < plainBytes / 2, `kubectl get --raw: ${sent} bytes on the wire for a ${plainBytes}-byte list`);
    const names = await kubectl(['get', 'configmaps', '-A', '-o', 'name']);
    t.equal(names.code, 0, names.stderr);
    t.equal(names.stdout.trim().split('\n').length, configMaps, 'kubectl get -A pages (500 a page) through every object');
    const table = await kubectl(['get', 'configmaps', '-A', '--no-headers']);
    t.equal(table.code, 0, table.stderr);
    t.equal(table.stdout.trim().split('\n').length, configMaps, 'as a Table');
  });
});
