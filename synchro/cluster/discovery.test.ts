// Discovery of a member: aggregated (two requests, two 304s while nothing changed) finds what
// the legacy documents find, on kube-apiserver v1.28's own answers and on a simulated member
// over HTTP; a member without aggregated discovery is read the legacy way; a stale group
// version counts as a group whose discovery failed.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { startSimCluster } from '../../hack/sim/cluster.ts';
import { widgetCRD } from '../../hack/sim/workload.ts';
import { connectCluster, HttpError, type ClusterClient, type ConditionalAnswer, type ConditionalOptions } from '../../member/client.ts';
import type { MemberResponse } from '../../member/http2.ts';
import { DiscoveryCache, discover, type DiscoveryResult } from './discovery.ts';

const reference = (file: string): unknown => JSON.parse(readFileSync(new URL(`../../hack/sim/reference/${file}`, import.meta.url), 'utf8'));
const aggregatedType = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';

/** A member answering with what kube-apiserver v1.28 answered (hack/sim/reference), counting requests. */
class ReferenceMember implements ClusterClient {
  readonly server = 'https://reference.invalid';
  readonly warnings: readonly string[] = [];
  readonly requests: string[] = [];
  constructor(
    private readonly aggregated = true,
    private readonly edit: (list: AggregatedList) => void = () => undefined,
  ) {}

  async get<T>(path: string): Promise<T> {
    this.requests.push(`GET ${path}`);
    if (path === '/api/v1') return reference('discovery/v1.json') as T;
    if (path === '/apis') return reference('apis.json') as T;
    const m = /^\/apis\/([^/]+)\/([^/]+)$/.exec(path);
    if (m) return reference(`discovery/${m[1]}_${m[2]}.json`) as T;
    throw new HttpError(404, `HTTP 404 ${path}`, 'NotFound');
  }

  async getConditional<T>(path: string, opts: ConditionalOptions = {}): Promise<ConditionalAnswer<T>> {
    this.requests.push(`GET ${path} (${opts.etag ? 'If-None-Match' : 'unconditional'})`);
    if (!this.aggregated || !opts.accept?.includes('g=apidiscovery.k8s.io')) {
      if (path === '/api') return { notModified: false, body: { kind: 'APIVersions', versions: ['v1'] } as T, contentType: 'application/json' };
      return { notModified: false, body: await this.get<T>(path), contentType: 'application/json' };
    }
    const list = reference(path === '/api' ? 'aggregated-discovery-api.json' : 'aggregated-discovery-apis.json') as AggregatedList;
    this.edit(list);
    const etag = `"${path}-${JSON.stringify(list).length}"`;
    if (opts.etag === etag) return { notModified: true };
    return { notModified: false, body: list as T, contentType: aggregatedType, etag };
  }

  async stream(): Promise<MemberResponse> {
    throw new Error('no watch here');
  }

  close(): void {}
}

interface AggregatedList {
  items: Array<{ metadata: { name?: string }; versions: Array<{ version: string; freshness?: string; resources: unknown[] }> }>;
}

/** A result in a comparable form: resources sorted by group and name. */
function canonical(r: DiscoveryResult) {
  return {
    resources: [...r.resources].sort((a, b) => `${a.group}/${a.resource}`.localeCompare(`${b.group}/${b.resource}`)),
    groups: [...r.groups].sort(),
    failedGroups: [...r.failedGroups.keys()].sort(),
  };
}

t.test("kube-apiserver v1.28's aggregated discovery finds what its legacy documents find", async (t) => {
  const member = new ReferenceMember();
  const cache = new DiscoveryCache();
  const answers: string[] = [];
  const onAnswer = (a: string) => answers.push(a);
  const aggregated = await discover(member, { cache, onAnswer });
  t.same(member.requests, ['GET /api (unconditional)', 'GET /apis (unconditional)'], 'two requests');
  t.same(answers, ['document', 'document'], 'two documents, as the metric counts them');
  const legacyMember = new ReferenceMember(false);
  const legacy = await discover(legacyMember, { cache: Object.assign(new DiscoveryCache(), { legacy: true }), onAnswer });
  t.same(answers.slice(2), ['legacy'], 'a legacy pass counts once');
  t.ok(legacyMember.requests.length > 15, `the legacy way: ${legacyMember.requests.length} requests`);
  // The capture has no resource list of the two groups that serve only create (TokenReview, the access reviews): the legacy way fails them.
  t.same(canonical(legacy).failedGroups, ['authentication.k8s.io', 'authorization.k8s.io'], 'the legacy way: the groups not captured failed');
  t.same(canonical(aggregated).failedGroups, [], 'aggregated: none failed');
  t.same({ ...canonical(aggregated), failedGroups: [] }, { ...canonical(legacy), failedGroups: [] }, 'the same resources and groups');
  t.ok(aggregated.resources.some((r) => r.group === 'autoscaling' && r.version === 'v2' && r.resource === 'horizontalpodautoscalers'), 'the preferred version of a group (autoscaling/v2)');
  t.ok(aggregated.resources.some((r) => r.group === '' && r.resource === 'pods' && r.namespaced && r.shortNames?.includes('po') && r.categories?.includes('all')), 'short names and categories');
  t.notOk(aggregated.resources.some((r) => r.resource.includes('/')), 'no subresource');

  member.requests.length = 0;
  answers.length = 0;
  const again = await discover(member, { cache, onAnswer });
  t.same(member.requests, ['GET /api (If-None-Match)', 'GET /apis (If-None-Match)'], 'a rediscovery asks with the ETags held');
  t.equal(cache.notModified, 2, 'both answered 304');
  t.same(answers, ['not-modified', 'not-modified'], 'counted as not modified');
  t.same(canonical(again), canonical(aggregated), 'and finds the same from the copies held');
});

t.test('a member without aggregated discovery is read the legacy way, and stays so on that connection', async (t) => {
  const member = new ReferenceMember(false);
  const cache = new DiscoveryCache();
  const first = await discover(member, { cache });
  t.ok(cache.legacy, 'marked legacy');
  t.ok(first.resources.some((r) => r.resource === 'deployments'), 'resources found');
  member.requests.length = 0;
  await discover(member, { cache });
  t.notOk(member.requests.some((r) => r === 'GET /api (unconditional)'), 'aggregated discovery is not asked for again');
  t.ok(member.requests.includes('GET /api/v1'), 'the legacy documents are read');
});

t.test('a stale group version counts as a group whose discovery failed', async (t) => {
  const member = new ReferenceMember(true, (list) => {
    for (const g of list.items) if (g.metadata.name === 'autoscaling') g.versions[0].freshness = 'Stale';
  });
  const found = await discover(member, { cache: new DiscoveryCache() });
  t.ok(found.groups.has('autoscaling'), 'the group is listed');
  t.match(found.failedGroups.get('autoscaling'), /^autoscaling\/v2: stale/, 'as failed, with the version');
  t.notOk(found.resources.some((r) => r.group === 'autoscaling'), 'none of its resources is found');
  t.ok(found.resources.some((r) => r.group === 'apps'), 'the other groups are');
});

t.test('a simulated member over HTTP: two 304s while nothing changes, the new document once a CRD is added', async (t) => {
  const sim = await startSimCluster({ name: 'east' });
  t.teardown(() => sim.close());
  const client = await connectCluster({ server: sim.url });
  t.teardown(() => client.close());
  const calls: string[] = [];
  const counted: ClusterClient = {
    server: client.server,
    warnings: client.warnings,
    get: (path, opts) => (calls.push(`get ${path}`), client.get(path, opts)),
    getConditional: (path, opts) => (calls.push(`conditional ${path}`), client.getConditional(path, opts)),
    stream: (path, opts) => client.stream(path, opts),
    close: () => client.close(),
  };
  const cache = new DiscoveryCache();
  const first = await discover(counted, { cache });
  t.same(calls, ['conditional /api', 'conditional /apis'], 'two requests');
  t.notOk(cache.legacy, 'the simulator serves aggregated discovery');
  const legacy = await discover(client, { cache: Object.assign(new DiscoveryCache(), { legacy: true }) });
  t.same(canonical(first), canonical(legacy), 'the same as the legacy documents say');

  calls.length = 0;
  await discover(counted, { cache });
  t.same(calls, ['conditional /api', 'conditional /apis'], 'a rediscovery: two requests');
  t.equal(cache.notModified, 2, 'both 304');

  sim.crud.create(sim.registry.byId('apiextensions.k8s.io/customresourcedefinitions')!, 'v1', undefined, widgetCRD);
  const after = await discover(counted, { cache });
  t.equal(cache.notModified, 3, '/api still 304, /apis answered anew');
  t.ok(after.resources.some((r) => r.group === 'demo.panoptes.io' && r.resource === 'widgets'), 'the CRD is found');
  t.ok(after.groups.has('demo.panoptes.io'), 'and its group');
});
