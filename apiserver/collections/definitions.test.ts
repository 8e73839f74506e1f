// The collections file: what it declares, and every way it can be wrong (refused whole, naming the problem).
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collectionsFlag } from '../../cli/commands/collections-flag.ts';
import { UsageError } from '../../cli/command.ts';
import { builtinCollections, parseCollections } from './definitions.ts';

t.test('declared collections', async (t) => {
  const defs = parseCollections(
    ['collections:', '  - name: network', '    resources: [services, ingresses.networking.k8s.io]', '  - name: unmanaged', '    resources:', '      - { resource: pods, bare: true }', '      - replicasets.apps', ''].join('\n'),
  );
  t.same(defs, [
    { name: 'network', kinds: [{ group: '', resource: 'services' }, { group: 'networking.k8s.io', resource: 'ingresses' }] },
    { name: 'unmanaged', kinds: [{ group: '', resource: 'pods', bare: true }, { group: 'apps', resource: 'replicasets' }] },
  ]);
  t.same(parseCollections(''), [], 'an empty file declares none');
});

t.test('a file that cannot be used is refused, naming the problem', async (t) => {
  const bad: Array<[string, RegExp]> = [
    ['collections: [', /not YAML/],
    ['metrics: []', /expected \{ collections/],
    ['collections: [{ name: Bad, resources: [pods] }]', /name must be a DNS label/],
    ['collections: [{ name: workloads, resources: [pods] }]', /"workloads" is built in/],
    ['collections: [{ name: a, resources: [pods] }, { name: a, resources: [pods] }]', /"a" is declared twice/],
    ['collections: [{ name: a, resources: [] }]', /at least one resource/],
    ['collections: [{ name: a, resources: [pods, pods] }]', /pods is listed twice/],
    ['collections: [{ name: a, resources: ["Pods/x"] }]', /resources\[0\]: "Pods\/x" is not <resource>\[.<group>\]/],
    ['collections: [{ name: a, resources: [{ resource: pods, bare: "yes" }] }]', /bare must be true or false/],
    ['collections: [{ name: a, resources: [{ resource: pods, owner: x }] }]', /unknown field "owner"/],
    ['collections: [{ name: a, kinds: [pods] }]', /unknown field "kinds"/],
    [`collections: [{ name: a, resources: [${Array.from({ length: 33 }, (_, i) => `r${i}`).join(',')}] }]`, /at most 32 resources/],
  ];
  for (const [text, re] of bad) t.throws(() => parseCollections(text), re, text);
});

t.test('--collections-file: the built-in collections and the file, or a usage error', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-collections-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'c.yaml');
  writeFileSync(file, 'collections: [{ name: config, resources: [configmaps] }]\n');
  t.same(collectionsFlag({}, {}).map((d) => d.name), builtinCollections.map((d) => d.name));
  t.same(collectionsFlag({ 'collections-file': file }, {}).map((d) => d.name), ['any', 'workloads', 'config']);
  t.same(collectionsFlag({}, { PANOPTES_COLLECTIONS_FILE: file }).map((d) => d.name), ['any', 'workloads', 'config']);
  t.throws(() => collectionsFlag({ 'collections-file': join(dir, 'none.yaml') }, {}), UsageError);
  writeFileSync(file, 'collections: [{ name: any, resources: [pods] }]\n');
  t.throws(() => collectionsFlag({ 'collections-file': file }, {}), /--collections-file .*"any" is built in/);
});
