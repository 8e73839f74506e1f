// `panoptes demo` and `panoptes kubeconfig` as a user runs them (node bin/panoptes.mjs ...).
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { sleep, tempDir, until } from './testutil.ts';

const bin = new URL('../../bin/panoptes.mjs', import.meta.url).pathname;

t.test('panoptes kubeconfig writes panoptes and panoptes-<cluster> contexts', async (t) => {
  const dir = tempDir(t);
  const out = join(dir, 'kc');
  const code = await new Promise<number>((resolve) => {
    execFile('node', [bin, 'kubeconfig', '--server', 'https://127.0.0.1:8443', '--clusters', 'a,b', '--out', out], { timeout: 30_000 }, (err) => resolve(err ? 1 : 0));
  });
  t.equal(code, 0);
  const doc = parse(readFileSync(out, 'utf8')) as { contexts: { name: string }[]; clusters: { name: string; cluster: { server: string } }[] };
  t.same(doc.contexts.map((c) => c.name), ['panoptes', 'panoptes-a', 'panoptes-b']);
  t.equal(doc.clusters[2].cluster.server, 'https://127.0.0.1:8443/apis/panoptes.io/v1alpha1/resources/clusters/b');
});

t.test('panoptes demo: three clusters, a kubeconfig, kubectl works through its contexts', async (t) => {
  const dir = tempDir(t);
  const kc = join(dir, 'kubeconfig');
  const storage = `sqlite:${join(dir, 'panoptes.db')}`;
  const p = spawn('node', [bin, 'demo', '--base-port', '0', '--listen', '127.0.0.1:0', '--storage', storage, '--kubeconfig', kc], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => p.on('exit', (code) => resolve(code)));
  t.teardown(() => p.kill('SIGKILL'));
  t.ok(await until(() => out.includes('Ctrl-C to stop'), 30_000), out);
  t.match(out, `Kubeconfig: ${kc}`);
  const doc = parse(readFileSync(kc, 'utf8')) as { contexts: { name: string }[] };
  t.same(doc.contexts.map((c) => c.name), ['sim-east', 'sim-west', 'sim-lab', 'panoptes', 'panoptes-east', 'panoptes-west', 'panoptes-lab']);
  const kubectl = (...args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile('kubectl', ['--kubeconfig', kc, '--cache-dir', join(dir, 'cache'), ...args], { timeout: 20_000 }, (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr }));
    });
  const r = await kubectl('--context', 'sim-west', 'get', 'deploy', '-n', 'shop', '-o', 'name');
  t.equal(r.code, 0);
  t.match(r.stdout, 'deployment.apps/frontend');
  // Through Panoptes: the same deployment in every cluster (discovery follows what synchro
  // reports within a few seconds of the initial sync).
  let all = await kubectl('--context', 'panoptes', 'get', 'deploy', '-n', 'shop', '-o', 'name');
  for (let i = 0; i < 20 && all.code !== 0; i++) {
    await new Promise((r) => setTimeout(r, 500));
    all = await kubectl('--context', 'panoptes', 'get', 'deploy', '-n', 'shop', '-o', 'name');
  }
  t.equal(all.code, 0, all.stderr);
  t.match(all.stdout, 'deployment.apps/frontend');
  const wide = await kubectl('--context', 'panoptes', 'get', 'deploy', '-A');
  for (const cluster of ['east', 'west', 'lab']) t.match(wide.stdout, new RegExp(`^shop\\s+${cluster}\\s+frontend`, 'm'), `${cluster} listed with its Cluster column`);
  // The external metric queries it prints: a live count, and the per-cluster declared metric.
  const printed = [...out.matchAll(/get --raw '(\/apis\/external\.metrics\.k8s\.io\/[^']+)'/g)].map((m) => m[1]);
  t.equal(printed.length, 2, 'external metric hints printed');
  const count = await kubectl('--context', 'panoptes', 'get', '--raw', printed[0]);
  t.equal(count.code, 0, count.stderr);
  t.match(JSON.parse(count.stdout), { kind: 'ExternalMetricValueList', items: [{ metricName: 'pods', value: /^\d+$/ }] });
  const perCluster = await kubectl('--context', 'panoptes', 'get', '--raw', printed[1]);
  t.equal(perCluster.code, 0, perCluster.stderr);
  t.same(
    JSON.parse(perCluster.stdout).items.map((i: { metricLabels: { cluster: string }; value: string }) => [i.metricLabels.cluster, i.value]),
    [['lab', '3'], ['west', '3']],
  );

  // The exported Service: the commands it prints, run as printed (the watch without -w).
  t.match(out, 'Multi-cluster Services: shop/catalog of east exported to west and lab (a MultiClusterService created at start):');
  const hints = out.slice(out.indexOf('Multi-cluster Services:')).split('\n').slice(1, 7).map((l) => l.trim().split(/\s+#/)[0].split(/\s+/).slice(3));
  t.equal(hints.length, 6, 'six commands');
  const run = async (args: string[]) => {
    const r = await kubectl(...args.filter((a) => a !== '-w'));
    return r.code === 0 ? r.stdout : `exit ${r.code}: ${r.stderr}`;
  };
  const eventually = async (pred: () => Promise<boolean>, timeoutMs: number) => {
    for (const end = Date.now() + timeoutMs; Date.now() < end; await sleep(500)) if (await pred()) return true;
    return false;
  };
  const [mcs, svc, slices, imports, scale, follow] = hints;
  const dispatched = await eventually(async () => /^catalog\s+1\s+2\s+2\s+2\/2\s/m.test(await run(mcs)), 30_000);
  t.ok(dispatched, 'kubectl get mcs: one provider, two consumers, two endpoints, both ready');
  t.match(await run(svc), /^catalog\s+ClusterIP\s+10\.96\./m, "west's Service made by Panoptes");
  t.match(await run(slices), /^east-catalog-\w{5}-[0-9a-f]{12}\s+IPv4\s+8080\s+10\.244\.\d+\.\d+,10\.244\.\d+\.\d+\s/m, "west's slice: east's two endpoints");
  t.match(await run(imports), /^catalog\s+ClusterSetIP\s/m, "west's ServiceImport");
  t.match(await run(scale), 'deployment.apps/catalog scaled');
  t.ok(await eventually(async () => /^east-catalog-\w{5}-[0-9a-f]{12}\s+IPv4\s+8080\s+\S+ \+ 1 more/m.test(await run(follow)), 30_000), "lab's slice follows: four endpoints");

  // The README's five-minute tour, line by line, as a user pastes it (follow and watch flags
  // dropped; the interactive shell runs one command instead).
  for (const line of readmeTour()) {
    const args = line.filter((a) => a !== '-f' && a !== '-w' && a !== '-it');
    if (args.includes('exec')) args.splice(args.indexOf('--') + 1, Infinity, 'echo', 'tour');
    const r = await kubectl(...args);
    t.equal(r.code, 0, `README: kubectl ${line.join(' ')}: ${r.stderr.slice(0, 300)}`);
  }

  p.kill('SIGTERM');
  t.equal(await exited, 0, 'stops cleanly on SIGTERM');
});

/** The kubectl commands of the README's tour (its first sh block), split as a shell would (single quotes), without `kubectl` and comments. */
function readmeTour(): string[][] {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const tour = readme.slice(readme.indexOf('## A five-minute tour'));
  const block = tour.slice(tour.indexOf('```sh\n') + 6, tour.indexOf('\n```', tour.indexOf('```sh\n')));
  const lines = block.split('\n').filter((l) => l.startsWith('kubectl '));
  if (lines.length < 10) throw new Error(`the README's tour has ${lines.length} kubectl lines`);
  return lines.map((l) => {
    const words: string[] = [];
    for (const m of l.matchAll(/'([^']*)'|(#.*$)|(\S+)/g)) {
      if (m[2] !== undefined) break;
      words.push(m[1] ?? m[3]);
    }
    return words.slice(1);
  });
}
