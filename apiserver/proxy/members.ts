// Connections from the apiserver to member clusters, for the proxy: one pooled endpoint per
// member (member/client.ts: TLS settings, credentials, network guard, keep-alive agent and
// HTTP/2 sessions), rebuilt when the member's credentials change (rotation: a new
// fingerprint), the old endpoint's connections closed once their requests end.
//
// Where the credentials come from is the MemberCredentials given at start (the CLI builds
// it: the same clusters file or kubeconfig contexts synchro is started with, and the Cluster
// objects registered through the API with inline credentials, read from storage; see
// apiserver/README.md "Proxy"). A member that is not Ready (away, not yet probed) is answered
// with 503 and Retry-After at once, without trying to connect.
import { StatusError } from '../../kube/status.ts';
import type { Logger } from '../../lib/log.ts';
import { memberEndpoint, type ClusterConnection, type ConnectOptions, type MemberEndpoint } from '../../member/client.ts';
import type { ClusterRecord } from '../../storage/types.ts';

/** How to reach a member, and a value that changes whenever any of it (credentials included) changes. */
export interface MemberConnectionInfo {
  connection: ClusterConnection;
  fingerprint: string;
}

/** The apiserver's source of member credentials. */
export interface MemberCredentials {
  /** The member's connection; `{ unavailable }` when it is known but cannot be used from here (and why); undefined when unknown. */
  lookup(cluster: string): Promise<MemberConnectionInfo | { unavailable: string } | undefined>;
}

/** No member credentials: every proxied request is a 503 naming the missing configuration. */
export const noMemberCredentials: MemberCredentials = {
  lookup: async () => ({ unavailable: 'this apiserver has no member credentials (start it with --clusters or --kubeconfig, as synchro)' }),
};

/** Seconds a client is told to wait before retrying a member that is not Ready. */
export const memberRetryAfterSeconds = 5;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** 503 ServiceUnavailable with Retry-After. */
export function memberUnavailable(cluster: string, why: string): StatusError {
  return new StatusError('ServiceUnavailable', `cluster ${JSON.stringify(cluster)} cannot be reached through the proxy now: ${why}`, { name: cluster, group: 'panoptes.io', kind: 'clusters', retryAfterSeconds: memberRetryAfterSeconds });
}

/** Why a registered member is not proxied to now (undefined: it is Ready). */
export function notReady(record: ClusterRecord | undefined): string | undefined {
  const s = record && isRecord(record.status) ? record.status : {};
  if (s.ready === true) return undefined;
  const phase = typeof s.phase === 'string' ? s.phase : 'Pending';
  const msg = typeof s.message === 'string' && s.message ? `: ${s.message}` : '';
  return `it is not Ready (phase ${phase}${msg})`;
}

interface Pooled {
  fingerprint: string;
  endpoint: Promise<MemberEndpoint>;
}

export class MemberPool {
  private readonly pooled = new Map<string, Pooled>();

  constructor(
    private readonly credentials: MemberCredentials,
    private readonly log: Logger,
    private readonly connect: ConnectOptions = {},
  ) {}

  /**
   * The endpoint of a registered member (`record`: its Cluster row, for readiness), or a
   * StatusError: 503 with Retry-After when it is not Ready or has no usable credentials here.
   */
  async endpoint(cluster: string, record: ClusterRecord | undefined): Promise<MemberEndpoint> {
    const away = notReady(record);
    if (away) throw memberUnavailable(cluster, away);
    const info = await this.credentials.lookup(cluster);
    if (!info) throw memberUnavailable(cluster, 'this apiserver has no connection settings for it');
    if ('unavailable' in info) throw memberUnavailable(cluster, info.unavailable);
    let p = this.pooled.get(cluster);
    if (!p || p.fingerprint !== info.fingerprint) {
      if (p) this.retire(cluster, p);
      p = { fingerprint: info.fingerprint, endpoint: memberEndpoint(info.connection, this.connect) };
      this.pooled.set(cluster, p);
    }
    try {
      return await p.endpoint;
    } catch (err) {
      if (this.pooled.get(cluster) === p) this.pooled.delete(cluster);
      this.log.warn('member connection settings cannot be used', { cluster, error: (err as Error).message });
      throw memberUnavailable(cluster, `its connection settings cannot be used: ${(err as Error).message}`);
    }
  }

  /** Closes the connections of replaced credentials: idle ones now, busy ones when their request ends. */
  private retire(cluster: string, p: Pooled): void {
    this.log.info('member credentials changed: new connections', { cluster });
    p.endpoint.then((e) => e.retire(), () => undefined);
  }

  close(): void {
    for (const p of this.pooled.values()) p.endpoint.then((e) => e.close(), () => undefined);
    this.pooled.clear();
  }
}
