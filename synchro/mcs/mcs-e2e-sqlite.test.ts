// Multi-cluster Services end to end on SQLite: `panoptes all-in-one` (a process) over five
// simulated member clusters, the real kubectl as the user; the process is killed in the middle
// and started again, and takes its consumers back. The scenario is hack/testing/mcs-e2e.ts;
// mcs-e2e-postgres.test.ts runs it on two synchro members.
import t from 'tap';
import { clusters, e2eFlags, e2eSetup, e2eTimings, mcsScenario } from '../../hack/testing/mcs-e2e.ts';
import { get } from '../../hack/sim/testutil.ts';

t.test('multi-cluster Services: panoptes all-in-one on SQLite, kubectl, the process killed and restarted in the middle', async (t) => {
  const { fleet, storage, listen, base, spawn, logs, serving } = await e2eSetup(t, 'sqlite');
  const start = async () => {
    const p = spawn('all-in-one', ['all-in-one', '--storage', storage, '--clusters', fleet.clustersFile, '--insecure-listen', listen, ...e2eFlags, '--log-level', 'info']);
    await serving();
    return p;
  };
  let current = await start();
  await fleet.useKubeconfig(base);

  await mcsScenario(t, fleet, {
    url: base,
    ...e2eTimings,
    metrics: async () => (await get(`${base}/metrics`)).text,
    logs,
    async crash(consumers) {
      const member = [...(await clusters(base))].find(([name]) => consumers.includes(name))?.[1].owner.member ?? '';
      current.child.kill('SIGKILL');
      await current.exited;
      current = await start();
      return { member };
    },
  });
});
