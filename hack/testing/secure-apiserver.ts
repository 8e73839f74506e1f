// For tests: the apiserver in aggregated mode over one storage, behind a fake host cluster
// (hack/testing/fakehost.ts) whose SubjectAccessReviews `policy` answers, and requests through
// the front proxy as a given user: what an RBAC decision test needs, in one call.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { secureServingFromFlags } from '../../apiserver/auth/config.ts';
import { createApiserver } from '../../apiserver/server.ts';
import { logger } from '../../lib/log.ts';
import type { Store } from '../../storage/store.ts';
import { makeCertSet } from '../certs.ts';
import { authenticationConfigMap, frontProxyRequest, startFakeHost, type FakeHost, type FakeHostOptions } from './fakehost.ts';

export interface SecureApiserver {
  base: string;
  host: FakeHost;
  /** A request through the front proxy as `user` (group system:authenticated), with a JSON body. */
  as(user: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: string }>;
  close(): Promise<void>;
}

export async function startSecureApiserver(store: Store, policy: FakeHostOptions['policy']): Promise<SecureApiserver> {
  const certs = makeCertSet(['127.0.0.1', 'localhost']);
  const host = await startFakeHost({ configMap: authenticationConfigMap(certs), tokens: {}, policy });
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-secure-'));
  writeFileSync(join(dir, 'tls.crt'), certs.serving.cert);
  writeFileSync(join(dir, 'tls.key'), certs.serving.key);
  const secure = await secureServingFromFlags({ 'tls-cert-file': join(dir, 'tls.crt'), 'tls-private-key-file': join(dir, 'tls.key') }, logger('test'), { authnClient: host.client(), authzClient: host.client() });
  const api = await createApiserver({ store, secure, log: logger('test') });
  const base = await api.listen('127.0.0.1', 0);
  return {
    base,
    host,
    as: (user, method, path, body) => frontProxyRequest(base, method, path, certs.servingCA.cert, certs.frontProxyClient, user, body),
    async close() {
      await api.close();
      secure.stop();
      await host.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
