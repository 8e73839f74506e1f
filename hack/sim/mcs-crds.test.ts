// The MCS-API CRDs (ServiceExport, ServiceImport) in some simulated clusters and not in
// others: discovery, kubectl, the CRD schema's validation, and the `panoptes sim` flags.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { startSimClusters } from './cluster.ts';
import { get, http, kubectl, tempDir, until } from './testutil.ts';

const G = 'multicluster.x-k8s.io';

t.test('startSimClusters: the CRDs in the clusters named, not in the others', async (t) => {
  const [a, b] = await startSimClusters(['a', 'b'], { mcsCRDs: ['b'] });
  t.teardown(() => Promise.all([a.close(), b.close()]));
  const groups = async (url: string) => ((await get(`${url}/apis`)).json.groups as { name: string }[]).map((g) => g.name);
  t.notOk((await groups(a.url)).includes(G), 'a has no MCS-API');
  t.equal((await get(`${a.url}/apis/${G}/v1alpha1`)).status, 404);
  t.ok((await groups(b.url)).includes(G), 'b has it');
  const list = (await get(`${b.url}/apis/${G}/v1alpha1`)).json;
  t.same(list.resources.map((r: { name: string }) => r.name).sort(), ['serviceexports', 'serviceexports/status', 'serviceimports', 'serviceimports/status']);
  const aggregated = (await get(`${b.url}/apis`, { Accept: 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList' })).json;
  t.ok(aggregated.items.some((i: { metadata: { name: string } }) => i.metadata.name === G), 'in aggregated discovery too');
  const crd = b.store.get('apiextensions.k8s.io/customresourcedefinitions', undefined, `serviceimports.${G}`)!;
  t.equal(crd.metadata.labels?.['multicluster.x-k8s.io/release-version'], 'v0.4.1', 'the published CRD, unchanged');

  const dir = tempDir(t);
  const ar = await kubectl(b, dir, ['api-resources', '--api-group', G]);
  t.match(ar.stdout, /serviceimports\s+svcim,svcimport\s+multicluster\.x-k8s\.io\/v1alpha1\s+true\s+ServiceImport/);
  const none = await kubectl(a, join(dir, 'a'), ['get', 'serviceimports']);
  t.not(none.code, 0);
  t.match(none.stderr, /the server doesn't have a resource type "serviceimports"/);
});

t.test('a ServiceImport is checked against the CRD\'s schema', async (t) => {
  const [c] = await startSimClusters(['c'], { mcsCRDs: true });
  t.teardown(() => c.close());
  const base = `${c.url}/apis/${G}/v1alpha1/namespaces/default/serviceimports`;
  const bad = await http('POST', base, { apiVersion: `${G}/v1alpha1`, kind: 'ServiceImport', metadata: { name: 'web' }, spec: { type: 'LoadBalancer', ports: [{ port: '80' }, {}], ips: ['10.0.0.1', '10.0.0.2', '10.0.0.3'] } });
  t.equal(bad.status, 422);
  // (kube-openapi's order of these is not a contract: compared sorted)
  t.same((bad.json.details.causes as { field: string; message: string }[]).map((x) => `${x.field}: ${x.message}`).sort(), [
    'spec.ips: Too many: 3: must have at most 2 items',
    'spec.ports[0].port: Invalid value: "string": spec.ports[0].port in body must be of type integer: "string"',
    'spec.ports[1].port: Required value',
    'spec.type: Unsupported value: "LoadBalancer": supported values: "ClusterSetIP", "Headless"',
  ]);
  t.match(bad.json.message, /^ServiceImport\.multicluster\.x-k8s\.io "web" is invalid: \[/);
  const missing = await http('POST', base, { apiVersion: `${G}/v1alpha1`, kind: 'ServiceImport', metadata: { name: 'web' }, spec: {} });
  t.equal(missing.json.message, 'ServiceImport.multicluster.x-k8s.io "web" is invalid: [spec.ports: Required value, spec.type: Required value]');

  // A valid one; the status (ignored on create) goes through the status subresource; unknown fields are pruned.
  const si = { apiVersion: `${G}/v1alpha1`, kind: 'ServiceImport', metadata: { name: 'web' }, spec: { type: 'ClusterSetIP', ports: [{ name: 'http', port: 80, protocol: 'TCP' }], extra: 1 }, status: { clusters: [{ cluster: 'east' }] } };
  const made = await http('POST', base, si);
  t.equal(made.status, 201, made.text);
  t.same([made.json.spec, made.json.status], [{ type: 'ClusterSetIP', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] }, undefined]);
  t.equal(made.headers.warning, '299 - "unknown field \\"spec.extra\\""');
  const dup = await http('PUT', `${base}/web/status`, { ...made.json, status: { clusters: [{ cluster: 'east' }, { cluster: 'east' }] } });
  t.equal(dup.json.message, 'ServiceImport.multicluster.x-k8s.io "web" is invalid: status.clusters[1]: Duplicate value: map[string]interface {}{"cluster":"east"}');
  const status = await http('PUT', `${base}/web/status`, { ...made.json, status: { clusters: [{ cluster: 'east' }, { cluster: 'west' }] } });
  t.equal(status.status, 200, status.text);
  t.same(status.json.status, { clusters: [{ cluster: 'east' }, { cluster: 'west' }] });
  const exp = await http('POST', `${c.url}/apis/${G}/v1alpha1/namespaces/default/serviceexports`, { apiVersion: `${G}/v1alpha1`, kind: 'ServiceExport', metadata: { name: 'web' } });
  t.equal(exp.status, 201, exp.text);
});

t.test('release v0.5.0: v1beta1 preferred, v1alpha1 still served', async (t) => {
  const [c] = await startSimClusters(['c'], { mcsCRDs: 'v0.5.0' });
  t.teardown(() => c.close());
  const group = (await get(`${c.url}/apis/${G}`)).json;
  t.same(group.versions.map((v: { version: string }) => v.version), ['v1beta1', 'v1alpha1']);
  t.equal(group.preferredVersion.version, 'v1beta1');
  t.equal((await get(`${c.url}/apis/${G}/v1alpha1/serviceimports`)).status, 200);
});

t.test('panoptes sim --mcs-crds: some clusters with the CRDs; --no-controllers', async (t) => {
  const dir = tempDir(t);
  const kc = join(dir, 'kubeconfig');
  const bin = new URL('../../bin/panoptes.mjs', import.meta.url).pathname;
  const p = spawn('node', [bin, 'sim', '--clusters', 'a,b', '--base-port', '0', '--workload', '--mcs-crds', 'b', '--no-controllers', '--kubeconfig', kc], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr.on('data', (d: Buffer) => (out += d.toString()));
  t.teardown(() => p.kill('SIGKILL'));
  t.ok(await until(() => out.includes('Ctrl-C to stop'), 30_000), out);
  const doc = parse(readFileSync(kc, 'utf8')) as { clusters: { name: string; cluster: { server: string } }[] };
  const url = (name: string) => doc.clusters.find((c) => c.name === `sim-${name}`)!.cluster.server;
  t.equal((await get(`${url('a')}/apis/${G}/v1alpha1`)).status, 404);
  t.equal((await get(`${url('b')}/apis/${G}/v1alpha1`)).status, 200);
  t.match((await get(`${url('a')}/_sim/status`)).json, { controllers: { running: false } });
  const bad = spawn('node', [bin, 'sim', '--clusters', 'a', '--base-port', '0', '--mcs-crds', 'z'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  bad.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => bad.on('exit', resolve));
  t.not(code, 0);
  t.match(err, /--mcs-crds names "z", which is not among --clusters/);
});
