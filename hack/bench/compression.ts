// Compression benchmark: a list of 500 objects (and of 5,000) fetched with and without gzip,
// direct and through an aggregator-like proxy, side by side in one run.
//   node --import tsx hack/bench/compression.ts [--objects 5000] [--sizes 500,5000]
//        [--samples 100] [--large-samples 30]
// One SQLite store holds --objects ConfigMaps of about 1.4 KB of JSON each (hack/fixtures.ts
// realisticConfigMap: gzip makes them about a third of their size, not a tenth) in
// one cluster; the apiserver serves them over TLS (HTTP/1.1 and HTTP/2) with front-proxy
// authentication. Each size is a first page (`limit=<size>`). Arms, interleaved request by
// request so that the machine's noise falls on all of them alike:
//   direct, identity         a client without Accept-Encoding, straight to Panoptes
//   direct, gzip             Accept-Encoding: gzip (kubectl, client-go, client-node send it)
//   aggregator, hop identity a client without Accept-Encoding through hack/testing/
//                            aggregator-proxy.ts, the hop to Panoptes uncompressed: what every
//                            request through the aggregator was before Panoptes compressed
//   aggregator, hop gzip     the same client; the proxy asks for gzip and inflates, as Go's
//                            transport in kube-aggregator does
//   aggregator, gzip         a client with Accept-Encoding: gzip through the proxy: gzip end to end
// Time is from the request to the last byte of the decoded body at the client (a gzipped body
// is inflated as it arrives, as Go's transport does); bytes are the body as sent to the client
// (and, through the proxy, as sent by Panoptes to the proxy). Everything runs on loopback in
// one process besides the clients' inflating: bytes cost nothing here, so the time shows what
// compression costs, and the bytes what it saves on a real network.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createGunzip } from 'node:zlib';
import { secureServingFromFlags } from '../../apiserver/auth/config.ts';
import { apiObjectThresholdBytes } from '../../apiserver/endpoints/compression.ts';
import { createApiserver } from '../../apiserver/server.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { openTestStore, seedCluster, stopTestPostgres } from '../../storage/testing.ts';
import type { UpstreamEvent } from '../../storage/types.ts';
import { makeCertSet } from '../certs.ts';
import { percentile, realisticConfigMap } from '../fixtures.ts';
import type { CompressionArmFigures, CompressionSizeFigures } from '../report/figures.ts';
import { recordRun } from '../report/record.ts';
import { startAggregatorProxy, type Hop } from '../testing/aggregator-proxy.ts';
import { authenticationConfigMap, startFakeHost } from '../testing/fakehost.ts';
import { prng } from '../testing/prng.ts';

const { values } = parseArgs({ options: { objects: { type: 'string' }, sizes: { type: 'string' }, samples: { type: 'string' }, 'large-samples': { type: 'string' } } });
const objects = Number(values.objects ?? 5000);
const sizes = (values.sizes ?? '500,5000').split(',').map(Number);
const samples = Number(values.samples ?? 100);
const largeSamples = Number(values['large-samples'] ?? 30);
setLogLevel('warn');

const P = '/apis/panoptes.io/v1alpha1/resources';

interface Arm {
  label: string;
  path: 'direct' | 'aggregator';
  client: 'identity' | 'gzip';
  hop?: Hop;
}

const arms: Arm[] = [
  { label: 'direct, identity', path: 'direct', client: 'identity' },
  { label: 'direct, gzip', path: 'direct', client: 'gzip' },
  { label: 'aggregator, hop identity (before)', path: 'aggregator', client: 'identity', hop: 'identity' },
  { label: 'aggregator, hop gzip', path: 'aggregator', client: 'identity', hop: 'go-default' },
  { label: 'aggregator, gzip end to end', path: 'aggregator', client: 'gzip', hop: 'go-default' },
];

interface Got {
  ms: number;
  wireBytes: number;
  decodedBytes: number;
  encoding?: string;
}

/** Reads a response to its last decoded byte: a gzipped body is inflated as it arrives. */
function consume(res: IncomingMessage, started: number): Promise<Got> {
  return new Promise((resolve, reject) => {
    let wireBytes = 0;
    let decodedBytes = 0;
    const encoding = res.headers['content-encoding'];
    res.on('data', (c: Buffer) => (wireBytes += c.length));
    const body = encoding === 'gzip' ? res.pipe(createGunzip()) : res;
    if (body !== res) body.on('data', (c: Buffer) => (decodedBytes += c.length));
    else res.on('data', (c: Buffer) => (decodedBytes += c.length));
    body.on('end', () => resolve({ ms: performance.now() - started, wireBytes, decodedBytes, encoding }));
    body.on('error', reject);
    res.on('error', reject);
  });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-bench-gzip-'));
  const certs = makeCertSet(['127.0.0.1', 'localhost']);
  const host = await startFakeHost({ configMap: authenticationConfigMap(certs), tokens: {}, policy: () => true });
  const { store, close: closeStore } = await openTestStore('sqlite');
  await seedCluster(store, 'c1', {
    phase: 'Ready',
    ready: true,
    apiResources: [{ group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true, singularName: 'configmap', shortNames: ['cm'] }],
  });
  const rand = prng(25);
  for (let start = 0; start < objects; start += 1000) {
    const batch: UpstreamEvent[] = [];
    for (let i = start; i < Math.min(objects, start + 1000); i++) batch.push(realisticConfigMap(i, rand));
    await store.applyBatch('c1', batch);
  }
  writeFileSync(join(dir, 'tls.crt'), certs.serving.cert);
  writeFileSync(join(dir, 'tls.key'), certs.serving.key);
  const log = logger('bench');
  const secure = await secureServingFromFlags({ 'tls-cert-file': join(dir, 'tls.crt'), 'tls-private-key-file': join(dir, 'tls.key') }, log, { authnClient: host.client(), authzClient: host.client() });
  const api = await createApiserver({ store, secure, log });
  const base = await api.listen('127.0.0.1', 0);
  const tls = { ca: certs.servingCA.cert, cert: certs.frontProxyClient.cert, key: certs.frontProxyClient.key };
  const user = { name: 'bench-admin', groups: ['system:masters'] };
  const proxy = await startAggregatorProxy({ target: base, tls, user });
  const directAgent = new HttpsAgent({ keepAlive: true, maxSockets: 1, ...tls });
  const proxyAgent = new HttpAgent({ keepAlive: true, maxSockets: 1 });

  const fetchArm = (arm: Arm, path: string): Promise<Got & { hopBytes?: number }> => {
    const headers: Record<string, string> = arm.client === 'gzip' ? { 'Accept-Encoding': 'gzip' } : {};
    const started = performance.now();
    return new Promise((resolve, reject) => {
      if (arm.path === 'direct') {
        const req = httpsRequest(`${base}${path}`, { agent: directAgent, headers: { ...headers, 'X-Remote-User': user.name, 'X-Remote-Group': user.groups[0] } }, (res) => consume(res, started).then(resolve, reject));
        req.on('error', reject);
        req.end();
        return;
      }
      proxy.hop = arm.hop!;
      const hopBefore = proxy.hopBytes;
      const req = httpRequest(`${proxy.url}${path}`, { agent: proxyAgent, headers }, (res) => consume(res, started).then((g) => resolve({ ...g, hopBytes: proxy.hopBytes - hopBefore }), reject));
      req.on('error', reject);
      req.end();
    });
  };

  const results: CompressionSizeFigures[] = [];
  try {
    for (const size of sizes) {
      const path = `${P}/api/v1/configmaps?limit=${size}`;
      const n = size > 1000 ? largeSamples : samples;
      const per = arms.map(() => ({ ms: [] as number[], wire: 0, hop: 0, decoded: 0, encoding: undefined as string | undefined }));
      for (let round = -3; round < n; round++) {
        // Rotate the order every round: none of the arms always follows another.
        for (let k = 0; k < arms.length; k++) {
          const a = (k + Math.max(round, 0)) % arms.length;
          const got = await fetchArm(arms[a], path);
          if (round < 0) continue; // warm-up
          per[a].ms.push(got.ms);
          per[a].wire = got.wireBytes;
          per[a].hop = got.hopBytes ?? 0;
          per[a].decoded = got.decodedBytes;
          per[a].encoding = got.encoding;
        }
      }
      const jsonBytes = per[0].decoded;
      for (const p of per) if (p.decoded !== jsonBytes) throw new Error(`an arm decoded ${p.decoded} bytes, the plain list has ${jsonBytes}`);
      const figures: CompressionArmFigures[] = arms.map((arm, i) => ({
        label: arm.label,
        path: arm.path,
        client: arm.client,
        ...(arm.hop ? { hop: arm.hop === 'identity' ? ('identity' as const) : ('gzip' as const), hopBytes: per[i].hop } : {}),
        clientBytes: per[i].wire,
        samplesMs: per[i].ms,
      }));
      results.push({ objects: size, jsonBytes, arms: figures });
      console.log(`\n${size} objects: ${jsonBytes} bytes of JSON, ${n} requests per arm`);
      console.log('  arm                                 to client   hop        p50 ms   p99 ms');
      for (const f of figures) {
        console.log(`  ${f.label.padEnd(36)}${String(f.clientBytes).padStart(9)}  ${String(f.hopBytes ?? '').padStart(9)}  ${percentile(f.samplesMs, 50).toFixed(1).padStart(7)}  ${percentile(f.samplesMs, 99).toFixed(1).padStart(7)}`);
      }
    }
  } finally {
    directAgent.destroy();
    proxyAgent.destroy();
    await proxy.close();
    await api.close();
    secure.stop();
    await closeStore();
    await stopTestPostgres();
    await host.close();
    rmSync(dir, { recursive: true, force: true });
  }
  await recordRun('compression', 'compression', { objects, sizes: sizes.join(','), samples, 'large-samples': largeSamples }, { objectBytes: Math.round(results[0].jsonBytes / results[0].objects), thresholdBytes: apiObjectThresholdBytes, gzipLevel: 1, sizes: results });
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
