// What API-registered clusters may reach: loopback, link-local and unspecified addresses are
// refused in every spelling (IPv4-mapped and -compatible IPv6, localhost names) unless the
// operator's --allow-member-networks covers them; the lookup guard checks every resolved
// address of every connection.
import type { LookupAddress } from 'node:dns';
import t from 'tap';
import { canonicalAddress, guardedLookup, MemberNetworks, NetworksError } from './networks.ts';

t.test('refused ranges, in every spelling', async (t) => {
  const none = new MemberNetworks();
  for (const a of ['127.0.0.1', '127.255.0.9', '0.0.0.0', '169.254.169.254', '::1', '::', 'fe80::1', 'FE80::1%eth0', '::ffff:127.0.0.1', '::ffff:7f00:1', '0:0:0:0:0:ffff:a9fe:a9fe', '::127.0.0.1', '[::1]']) {
    t.ok(none.refused(a), `${a} refused: ${none.refused(a)}`);
  }
  for (const a of ['10.0.0.1', '192.168.1.10', '172.16.0.1', '8.8.8.8', '2001:db8::1', 'fd00::1', '::ffff:10.0.0.1', 'not-an-address']) {
    t.equal(none.refused(a), undefined, `${a} may be reached`);
  }
  t.match(none.refused('169.254.169.254'), /link-local \(cloud metadata/);
  for (const h of ['localhost', 'LOCALHOST.', 'api.localhost', 'ip6-localhost', '127.0.0.1', '[::1]']) t.ok(none.hostRefused(h), `host ${h}`);
  t.equal(none.hostRefused('east.example.com'), undefined, 'names are checked when connecting');
  t.same(canonicalAddress('::ffff:169.254.169.254'), { address: '169.254.169.254', family: 'ipv4' });
});

t.test('the operator allowance', async (t) => {
  const lo = MemberNetworks.parse('127.0.0.0/8, fe80::/10');
  t.equal(lo.refused('127.0.0.1'), undefined);
  t.equal(lo.refused('::ffff:127.0.0.1'), undefined, 'the mapped form too');
  t.ok(lo.refused('::1'), '::1 is not in 127.0.0.0/8');
  t.ok(lo.refused('169.254.169.254'));
  t.equal(lo.hostRefused('localhost'), undefined);
  t.ok(lo.hostAllowed('127.0.0.5'));
  t.notOk(lo.hostAllowed('10.0.0.1'), 'allowed means inside the allowance, not merely not refused');
  t.same(MemberNetworks.parse('').cidrs, []);
  t.same(MemberNetworks.parse('10.1.2.3').cidrs, ['10.1.2.3'], 'a single address');
  for (const bad of ['127.0.0.0/33', 'nope', '10.0.0.0/8/1', '::/129']) t.throws(() => MemberNetworks.parse(bad), NetworksError, bad);
});

t.test('the lookup guard: every resolved address, every connection', async (t) => {
  const answers: LookupAddress[][] = [];
  const resolve = (_h: string, _o: unknown, cb: (err: NodeJS.ErrnoException | null, a: LookupAddress[]) => void) => cb(null, answers.shift() ?? []);
  const lookup = (networks: MemberNetworks, onlyAllowed = false) => {
    const fn = guardedLookup(networks, { onlyAllowed, resolve });
    return (all: boolean) =>
      new Promise<{ err?: Error; address?: unknown }>((done) => fn('rebind.example', { all }, (err, address) => done({ err: err ?? undefined, address })));
  };
  const none = lookup(new MemberNetworks());
  answers.push([{ address: '10.0.0.5', family: 4 }]);
  t.same(await none(false), { err: undefined, address: '10.0.0.5' });
  answers.push([{ address: '127.0.0.1', family: 4 }]);
  const rebound = await none(false);
  t.match(rebound.err, { code: 'EREFUSEDADDRESS', message: /rebind.example resolves to 127.0.0.1 is loopback: .*--allow-member-networks/ }, 'the same name, rebound to loopback');
  answers.push([{ address: '::1', family: 6 }, { address: '10.0.0.6', family: 4 }]);
  t.same(await none(true), { err: undefined, address: [{ address: '10.0.0.6', family: 4 }] }, 'refused addresses are dropped from a mixed answer');
  answers.push([{ address: '169.254.169.254', family: 4 }]);
  t.ok((await lookup(MemberNetworks.parse('127.0.0.0/8'))(false)).err, 'an allowance covers its networks only');
  const http = lookup(MemberNetworks.parse('127.0.0.0/8'), true);
  answers.push([{ address: '10.0.0.7', family: 4 }]);
  t.match((await http(false)).err, { message: /10.0.0.7 is not in --allow-member-networks \(plain http:\/\/ with credentials\)/ });
  answers.push([{ address: '127.0.0.1', family: 4 }]);
  t.same(await http(false), { err: undefined, address: '127.0.0.1' });
});
