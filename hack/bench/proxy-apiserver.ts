// The apiserver of hack/bench/proxy.ts, in a child process of its own so that its memory and
// CPU are its own: plain HTTP, proxied requests as the development user, members reached
// with the credentials the parent sends. IPC: `stats` answers the process's memory after a
// full GC (needs --expose-gc) and its CPU time; `exit` closes it.
import type { MemberCredentials } from '../../apiserver/proxy/members.ts';
import { createApiserver } from '../../apiserver/server.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { Store } from '../../storage/store.ts';

setLogLevel('error');

interface Config {
  storage: string;
  members: Record<string, { server: string; token: string }>;
}

const config = JSON.parse(process.env.PANOPTES_BENCH_PROXY ?? '{}') as Config;
const store = await Store.open(config.storage);
const credentials: MemberCredentials = {
  lookup: async (name) => {
    const m = config.members[name];
    return m ? { connection: { server: m.server, token: m.token }, fingerprint: m.server } : undefined;
  },
};
const api = await createApiserver({ store, log: logger('apiserver'), catalogOptions: { refreshMs: 500 }, proxy: { credentials, unauthenticatedUser: { name: 'bench', groups: ['system:masters'], extra: {} } } });
const url = await api.listen('127.0.0.1', 0);
process.send?.({ ok: 'ready', url });
process.on('message', async (m: { cmd: string }) => {
  if (m.cmd === 'stats') {
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    gc?.();
    const mem = process.memoryUsage();
    process.send?.({ ok: 'stats', rss: mem.rss, heapUsed: mem.heapUsed, external: mem.external, cpu: process.cpuUsage(), streams: api.streams.open });
  }
  if (m.cmd === 'exit') {
    await api.close();
    await store.close();
    process.send?.({ ok: 'exit' });
    process.exit(0);
  }
});
