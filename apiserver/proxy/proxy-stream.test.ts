// Streamed answers through the proxy: a follow of pods/log reaches the client line by line
// while the member is still writing (nothing is buffered whole), a client that goes away
// closes the member request at once, and a long-running request has no request timeout while
// any other one ends with 504 after it.
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { setLogLevel } from '../../lib/log.ts';
import { openTestStore, seedCluster } from '../../storage/testing.ts';
import { createApiserver } from '../server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const P = '/apis/panoptes.io/v1alpha1/resources/clusters/east';

t.test('logs stream through, the client going away closes the member request, timeouts as kube', async (t) => {
  // A member that writes a log line every 50 ms until its client goes away, and answers slowly elsewhere.
  const closed: string[] = [];
  const member = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.on('close', () => res.writableEnded || closed.push(req.url ?? ''));
    if (req.url?.includes('/log')) {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      let n = 0;
      const timer = setInterval(() => res.write(`line ${++n}\n`), 50);
      res.on('close', () => clearInterval(timer));
      return;
    }
    setTimeout(() => res.writableEnded || (res.writeHead(200, { 'Content-Type': 'application/json' }), res.end('{"kind":"PodMetricsList","items":[]}')), 2000);
  });
  await new Promise<void>((r) => member.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (member.closeAllConnections(), member.close(() => r()))));
  const memberUrl = `http://127.0.0.1:${(member.address() as AddressInfo).port}`;

  const { store, close } = await openTestStore('sqlite');
  await seedCluster(store, 'east', { phase: 'Ready', ready: true, apiResources: [{ group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' }] });
  const api = await createApiserver({
    store,
    limits: { requestTimeoutMs: 500 },
    proxy: { credentials: { lookup: async () => ({ connection: { server: memberUrl }, fingerprint: memberUrl }) }, unauthenticatedUser: { name: 'dev', groups: [], extra: {} } },
  });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    await close();
  });

  const lines: string[] = [];
  const started = Date.now();
  const res = await new Promise<IncomingMessage>((resolve, reject) => request(`${base}${P}/api/v1/namespaces/shop/pods/web/log?follow=true`, resolve).on('error', reject).end());
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-type'], 'text/plain');
  await new Promise<void>((resolve) => {
    res.setEncoding('utf8').on('data', (d: string) => {
      lines.push(...d.split('\n').filter(Boolean));
      if (lines.length >= 12) resolve(); // 600 ms of lines: past the request timeout
    });
  });
  t.same(lines.slice(0, 3), ['line 1', 'line 2', 'line 3'], 'lines arrive while the member is still writing');
  t.ok(Date.now() - started > 500, 'beyond the request timeout: a log has none');
  res.destroy();
  const deadline = Date.now() + 5000;
  while (!closed.some((u) => u.includes('/log')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  t.ok(closed.some((u) => u.includes('/log')), 'the member request closed when the client went away');

  const slow = await new Promise<{ status: number; body: string }>((resolve, reject) =>
    request(`${base}${P}/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods`, (r) => {
      let body = '';
      r.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => resolve({ status: r.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end(),
  );
  t.equal(slow.status, 504, slow.body);
  t.match(JSON.parse(slow.body), { reason: 'Timeout' });
});
