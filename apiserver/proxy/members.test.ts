// The member pool: one endpoint per member, rebuilt when its credentials change (the next
// request uses the new token; the old connections close), the same one while they do not; a
// member that is not Ready or has unusable settings is a 503 with Retry-After.
import { request } from 'node:http';
import t from 'tap';
import { simCluster } from '../../hack/sim/testutil.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import type { ClusterRecord } from '../../storage/types.ts';
import { MemberPool, type MemberCredentials } from './members.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const ready: ClusterRecord = { name: 'east', spec: {}, status: { ready: true, phase: 'Ready' }, createdAt: '', updatedAt: '' };

t.test('rotation opens a new pool; unchanged credentials keep it', async (t) => {
  const east = await simCluster(t, { name: 'east' });
  let token = 'token-1';
  const creds: MemberCredentials = { lookup: async () => ({ connection: { server: east.url, token }, fingerprint: token }) };
  const pool = new MemberPool(creds, logger('test'));
  t.teardown(() => pool.close());
  const call = async () => {
    const e = await pool.endpoint('east', ready);
    const headers = await e.headers();
    await new Promise<void>((resolve, reject) =>
      request({ host: e.server.hostname, port: e.server.port, path: '/api/v1/namespaces', agent: e.agent, headers }, (res) => res.resume().on('end', resolve)).on('error', reject).end(),
    );
    return e;
  };
  const first = await call();
  t.equal(await call(), first, 'the same endpoint while the credentials are the same');
  t.equal(east.auth.seen.at(-1), 'token-1');
  const idle = Object.values(first.agent.freeSockets).flat().length;
  t.equal(idle, 1, 'a kept-alive connection');
  token = 'token-2';
  const second = await call();
  t.not(second, first, 'new credentials: a new endpoint');
  t.equal(east.auth.seen.at(-1), 'token-2', 'the next request uses the new token');
  await new Promise((r) => setTimeout(r, 50));
  t.equal(Object.values(first.agent.freeSockets).flat().length, 0, "the old pool's idle connections are closed");
});

t.test('not Ready, no credentials, unusable settings: 503 with Retry-After', async (t) => {
  const pool = new MemberPool(
    {
      lookup: async (name) => (name === 'nocreds' ? undefined : name === 'secret' ? { unavailable: 'its credentials are in a Secret' } : { connection: { kubeconfig: '/nonexistent/kubeconfig' }, fingerprint: 'x' }),
    },
    logger('test'),
  );
  t.teardown(() => pool.close());
  const away: ClusterRecord = { ...ready, status: { ready: false, phase: 'Unreachable', message: 'GET /readyz: ECONNREFUSED' } };
  await t.rejects(pool.endpoint('east', away), { reason: 'ServiceUnavailable', message: /not Ready \(phase Unreachable: GET \/readyz: ECONNREFUSED\)/, details: { retryAfterSeconds: 5 } });
  await t.rejects(pool.endpoint('east', undefined), { reason: 'ServiceUnavailable', message: /not Ready \(phase Pending\)/ });
  await t.rejects(pool.endpoint('nocreds', ready), { reason: 'ServiceUnavailable', message: /no connection settings/ });
  await t.rejects(pool.endpoint('secret', ready), { reason: 'ServiceUnavailable', message: /in a Secret/ });
  await t.rejects(pool.endpoint('broken', ready), { reason: 'ServiceUnavailable', message: /connection settings cannot be used/ });
});
