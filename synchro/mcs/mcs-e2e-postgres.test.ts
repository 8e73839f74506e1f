// Multi-cluster Services end to end on PostgreSQL: `panoptes apiserver` and two `panoptes
// synchro` members (processes) over five simulated member clusters, the real kubectl as the
// user; one member is killed in the middle and the other takes its consumers over. The
// scenario is hack/testing/mcs-e2e.ts; mcs-e2e-sqlite.test.ts runs it on the all-in-one.
import t from 'tap';
import { clusters, e2eFlags, e2eSetup, e2eTimings, mcsScenario } from '../../hack/testing/mcs-e2e.ts';
import { get } from '../../hack/sim/testutil.ts';
import { stopTestPostgres } from '../../storage/testing.ts';
import { waitUntil, type PanoptesProcess } from '../testutil.ts';

t.teardown(stopTestPostgres);

t.test('multi-cluster Services: apiserver and two synchro members on PostgreSQL, kubectl, a member killed in the middle', async (t) => {
  const { fleet, storage, listen, base, spawn, logs, serving } = await e2eSetup(t, 'postgres');
  spawn('apiserver', ['apiserver', '--storage', storage, '--insecure-listen', listen, '--log-level', 'warn']);
  const synchro = (identity: string) =>
    spawn(identity, ['synchro', '--storage', storage, '--clusters', fleet.clustersFile, '--identity', identity, ...e2eFlags, '--metrics-listen', '127.0.0.1:0', '--log-level', 'info']);
  const members = new Map([['s1', synchro('s1')], ['s2', synchro('s2')]]);
  const metricsUrl = (p: PanoptesProcess): Promise<string> =>
    waitUntil(`${p.name} logging its metrics URL`, () => p.log.map((l) => /"metrics listening".*"url":"([^"]+)"/.exec(l)?.[1]).find(Boolean), 30_000) as Promise<string>;
  await serving();
  await fleet.useKubeconfig(base);

  await mcsScenario(t, fleet, {
    url: base,
    ...e2eTimings,
    async metrics() {
      return (await Promise.all([...members.values()].map(async (p) => (await get(await metricsUrl(p))).text))).join('\n');
    },
    logs,
    async crash(consumers) {
      // The member holding most of these consumers.
      const owners = [...(await clusters(base))].filter(([name]) => consumers.includes(name)).map(([, c]) => c.owner.member);
      const member = [...members.keys()].sort((a, b) => owners.filter((o) => o === b).length - owners.filter((o) => o === a).length)[0];
      const p = members.get(member)!;
      members.delete(member);
      p.child.kill('SIGKILL');
      await p.exited;
      return { member };
    },
  });
});
