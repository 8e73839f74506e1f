// --allow-member-networks (env PANOPTES_ALLOW_MEMBER_NETWORKS) of apiserver, synchro and
// all-in-one: parsed into the allowance, a bad CIDR a usage error, and a running apiserver
// refusing or accepting a Cluster on 127.0.0.1 as it says.
import t from 'tap';
import { http } from '../../hack/sim/testutil.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { openTestStore } from '../../storage/testing.ts';
import { freePort } from '../../storage/testing/postgres.ts';
import { UsageError } from '../command.ts';
import { startServing } from './apiserver.ts';
import { memberNetworksFlag } from './member-networks-flag.ts';
import { parseSynchroFlags } from './synchro-flags.ts';

setLogLevel('error');

t.test('the flag, else the environment; nothing by default', async (t) => {
  t.same(memberNetworksFlag({}, {}).cidrs, [], 'nothing allowed by default');
  t.same(memberNetworksFlag({ 'allow-member-networks': '127.0.0.0/8,fe80::/10' }, {}).cidrs, ['127.0.0.0/8', 'fe80::/10']);
  t.same(memberNetworksFlag({}, { PANOPTES_ALLOW_MEMBER_NETWORKS: '127.0.0.0/8' }).cidrs, ['127.0.0.0/8']);
  t.same(memberNetworksFlag({ 'allow-member-networks': '' }, { PANOPTES_ALLOW_MEMBER_NETWORKS: '127.0.0.0/8' }).cidrs, [], 'the flag wins, even empty');
  t.throws(() => memberNetworksFlag({ 'allow-member-networks': '127.0.0.0/40' }, {}), UsageError);
  t.throws(() => parseSynchroFlags({ 'allow-member-networks': 'localhost' }), /--allow-member-networks: "localhost" is not a CIDR/);
  t.same(parseSynchroFlags({ 'allow-member-networks': '127.0.0.0/8' }).memberNetworks?.cidrs, ['127.0.0.0/8'], 'synchro gets it');
});

t.test('a running apiserver validates spec.server with it', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  const body = (name: string) => ({ metadata: { name }, spec: { server: 'https://127.0.0.1:6443' } });
  const strict = await startServing(store, { 'insecure-listen': `127.0.0.1:${await freePort()}` }, logger('test'));
  t.teardown(() => strict.close());
  t.match(await http('POST', `${strict.url}/apis/panoptes.io/v1alpha1/clusters`, body('a')), { status: 422, json: { message: /--allow-member-networks/ } });
  const lenient = await startServing(store, { 'insecure-listen': `127.0.0.1:${await freePort()}`, 'allow-member-networks': '127.0.0.0/8' }, logger('test'));
  t.teardown(() => lenient.close());
  t.equal((await http('POST', `${lenient.url}/apis/panoptes.io/v1alpha1/clusters`, body('b'))).status, 201);
});
