// A fleet for proxy tests and benchmarks, in one process: simulated members that require a
// token (Panoptes' own may read and impersonate; users `alice` may do anything, `bob` only
// read), synchro syncing them into storage, and the apiserver with member credentials. Two
// modes, as Panoptes runs: `plain` (HTTP, no authentication; proxied requests go as the
// development user alice) and `aggregated` (HTTPS with the front proxy's client certificate,
// a fake host cluster for SubjectAccessReviews, and kube-aggregator's stand-in in front,
// which names the user; one per user).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { secureServingFromFlags } from '../../apiserver/auth/config.ts';
import type { SubjectAccessReviewSpec } from '../../apiserver/auth/authz.ts';
import type { MemberCredentials } from '../../apiserver/proxy/members.ts';
import type { StreamLimits } from '../../apiserver/proxy/upgrade.ts';
import { createApiserver, type Apiserver } from '../../apiserver/server.ts';
import { logger } from '../../lib/log.ts';
import { openTestStore, type Backend } from '../../storage/testing.ts';
import { startSynchro } from '../../synchro/synchro.ts';
import { makeCertSet } from '../certs.ts';
import { impersonatorRules, readVerbs } from '../sim/auth.ts';
import { startSimClusters, type SimCluster } from '../sim/cluster.ts';
import { startAggregatorProxy, type AggregatorProxy } from './aggregator-proxy.ts';
import { authenticationConfigMap, startFakeHost } from './fakehost.ts';

export const resourcesPath = '/apis/panoptes.io/v1alpha1/resources';
export const panoptesToken = 'panoptes-member-token';

export interface ProxyFleetOptions {
  mode: 'plain' | 'aggregated';
  names: string[];
  dir: string;
  backend?: Backend;
  /** A new log line every this many ms in the members (default 100). */
  logIntervalMs?: number;
  streams?: Partial<StreamLimits>;
  /** SubjectAccessReview policy of the host cluster (aggregated mode; default: allow all). */
  policy?: (s: SubjectAccessReviewSpec) => true | string;
  /**
   * Members serve HTTPS (HTTP/2 and HTTP/1.1, as a kube-apiserver) with a certificate of their
   * own CA, which synchro and the apiserver are given; `http2` is --member-http2 for both.
   */
  memberTls?: { http2: boolean };
}

export interface ProxyFleet {
  sims: SimCluster[];
  api: Apiserver;
  /** Panoptes' base URL for a user: plain mode ignores the user (alice); aggregated mode starts one front proxy per user. */
  base(user?: string): Promise<string>;
  /** The one-cluster view's URL of a member, as a kubectl --server. */
  clusterServer(name: string, user?: string): Promise<string>;
  close(): Promise<void>;
}

export async function startProxyFleet(o: ProxyFleetOptions): Promise<ProxyFleet> {
  const closers: Array<() => Promise<unknown> | unknown> = [];
  const close = async () => {
    for (const c of closers.reverse()) await c();
  };
  try {
    const memberCA = o.memberTls ? makeCertSet(['127.0.0.1']) : undefined;
    const sims = await startSimClusters(o.names, { workload: true, ...(memberCA ? { tls: { key: memberCA.serving.key, cert: memberCA.serving.cert } } : {}) });
    const caData = memberCA ? { certificateAuthorityData: Buffer.from(memberCA.servingCA.cert).toString('base64') } : {};
    closers.push(() => Promise.all(sims.map((s) => s.close())));
    for (const s of sims) {
      s.streams.logIntervalMs = o.logIntervalMs ?? 100;
      s.auth.grant(panoptesToken, { name: 'panoptes', rules: [...impersonatorRules, { verbs: readVerbs }] });
      s.auth.grant('alice-token', { name: 'alice', rules: [{ verbs: ['*'] }] });
      s.auth.grant('bob-token', { name: 'bob', rules: [{ verbs: readVerbs }] });
      s.auth.tokens = [panoptesToken];
    }
    const { store, close: closeStore } = await openTestStore(o.backend ?? 'sqlite');
    closers.push(closeStore);
    const clustersFile = join(o.dir, 'clusters.yaml');
    writeFileSync(clustersFile, stringify({ clusters: sims.map((s) => ({ name: s.name, server: s.url, token: panoptesToken, ...caData, resources: ['pods', 'namespaces', 'deployments.apps'] })) }));
    const http2 = o.memberTls ? { http2: o.memberTls.http2 } : {};
    const synchro = await startSynchro({ store, clustersFile, log: logger('synchro'), ...(o.memberTls ? { memberHttp2: o.memberTls.http2 } : {}) });
    closers.push(() => synchro.stop());
    if (!(await synchro.waitForInitialSync(30_000))) throw new Error('the members did not sync within 30 s');
    const byName = new Map(sims.map((s) => [s.name, s]));
    const credentials: MemberCredentials = {
      lookup: async (name) => {
        const s = byName.get(name);
        return s ? { connection: { server: s.url, token: panoptesToken, ...caData }, fingerprint: s.url } : undefined;
      },
    };
    const log = logger('apiserver');
    if (o.mode === 'plain') {
      const api = await createApiserver({ store, log, catalogOptions: { refreshMs: 200 }, proxy: { credentials, connect: http2, unauthenticatedUser: { name: 'alice', groups: ['devs'], extra: {} } }, streams: o.streams });
      const url = await api.listen('127.0.0.1', 0);
      closers.push(() => api.close());
      return { sims, api, base: async () => url, clusterServer: async (n) => `${url}${resourcesPath}/clusters/${n}`, close };
    }
    const certs = makeCertSet(['127.0.0.1', 'localhost']);
    const host = await startFakeHost({ configMap: authenticationConfigMap(certs), tokens: {}, policy: o.policy ?? (() => true) });
    closers.push(() => host.close());
    writeFileSync(join(o.dir, 'tls.crt'), certs.serving.cert);
    writeFileSync(join(o.dir, 'tls.key'), certs.serving.key);
    const secure = await secureServingFromFlags({ 'tls-cert-file': join(o.dir, 'tls.crt'), 'tls-private-key-file': join(o.dir, 'tls.key') }, log, { authnClient: host.client(), authzClient: host.client() });
    closers.push(() => secure.stop());
    const api = await createApiserver({ store, log, secure, catalogOptions: { refreshMs: 200 }, proxy: { credentials, connect: http2 }, streams: o.streams });
    const target = await api.listen('127.0.0.1', 0);
    closers.push(() => api.close());
    const proxies = new Map<string, Promise<AggregatorProxy>>();
    const base = async (user = 'alice') => {
      let p = proxies.get(user);
      if (!p) {
        p = startAggregatorProxy({ target, tls: { ca: certs.servingCA.cert, cert: certs.frontProxyClient.cert, key: certs.frontProxyClient.key }, user: { name: user, groups: ['devs'] } });
        proxies.set(user, p);
        closers.push(async () => (await p!).close());
      }
      return (await p).url;
    };
    return { sims, api, base, clusterServer: async (n, user) => `${await base(user)}${resourcesPath}/clusters/${n}`, close };
  } catch (err) {
    await close();
    throw err;
  }
}
