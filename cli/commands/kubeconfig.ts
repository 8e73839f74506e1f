// `panoptes kubeconfig`: writes a kubeconfig with contexts for a Panoptes server (`panoptes`,
// `panoptes-<cluster>`) and, for the demo, for simulated member clusters (`sim-<name>`).
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { stringify } from 'yaml';
import { parseFlags, UsageError, type Command } from '../command.ts';
import { summaries } from './summaries.ts';

export const panoptesResourcesPath = '/apis/panoptes.io/v1alpha1/resources';

export interface PanoptesTarget {
  /** Base URL of the Panoptes apiserver (or of the kube-apiserver it is aggregated into). */
  server: string;
  /** Member cluster names: one `panoptes-<cluster>` context each. */
  clusters: string[];
  token?: string;
  /** Path of a CA bundle file. */
  certificateAuthority?: string;
  insecureSkipTlsVerify?: boolean;
}

export interface KubeconfigSpec {
  /** Simulated member clusters: context `sim-<name>` each (plain http, no credentials). */
  sims?: { name: string; url: string }[];
  panoptes?: PanoptesTarget;
  /** Defaults to `panoptes` when given, else the first simulated cluster. */
  currentContext?: string;
}

interface NamedCluster {
  name: string;
  cluster: Record<string, unknown>;
}

/** The kubeconfig document (as an object) for a spec. */
export function buildKubeconfig(spec: KubeconfigSpec): Record<string, unknown> {
  const clusters: NamedCluster[] = [];
  const contexts: { name: string; context: { cluster: string; user: string } }[] = [];
  const users: { name: string; user: Record<string, unknown> }[] = [];
  for (const s of spec.sims ?? []) {
    clusters.push({ name: `sim-${s.name}`, cluster: { server: s.url.replace(/\/+$/, '') } });
    contexts.push({ name: `sim-${s.name}`, context: { cluster: `sim-${s.name}`, user: 'sim' } });
  }
  if (spec.sims?.length) users.push({ name: 'sim', user: {} });
  const p = spec.panoptes;
  if (p) {
    const base = p.server.replace(/\/+$/, '') + panoptesResourcesPath;
    const tls: Record<string, unknown> = {};
    if (p.certificateAuthority) tls['certificate-authority'] = p.certificateAuthority;
    if (p.insecureSkipTlsVerify) tls['insecure-skip-tls-verify'] = true;
    clusters.push({ name: 'panoptes', cluster: { server: base, ...tls } });
    contexts.push({ name: 'panoptes', context: { cluster: 'panoptes', user: 'panoptes' } });
    for (const c of p.clusters) {
      clusters.push({ name: `panoptes-${c}`, cluster: { server: `${base}/clusters/${encodeURIComponent(c)}`, ...tls } });
      contexts.push({ name: `panoptes-${c}`, context: { cluster: `panoptes-${c}`, user: 'panoptes' } });
    }
    users.push({ name: 'panoptes', user: p.token ? { token: p.token } : {} });
  }
  const current = spec.currentContext ?? (p ? 'panoptes' : contexts[0]?.name ?? '');
  return { apiVersion: 'v1', kind: 'Config', preferences: {}, 'current-context': current, clusters, contexts, users };
}

/** Writes the kubeconfig (mode 0600, parent directories created); `-` writes to stdout. */
export async function writeKubeconfig(file: string, spec: KubeconfigSpec): Promise<void> {
  const text = stringify(buildKubeconfig(spec));
  if (file === '-') {
    process.stdout.write(text);
    return;
  }
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, text, { mode: 0o600 });
}

function splitList(value: string | undefined): string[] {
  return (value ?? '').split(',').map((s) => s.trim()).filter(Boolean);
}

export const kubeconfig: Command = {
  name: 'kubeconfig',
  summary: summaries.kubeconfig,
  usage: `Usage: panoptes kubeconfig --server URL --clusters a,b [flags]

Writes a kubeconfig with a context \`panoptes\` (server URL + ${panoptesResourcesPath})
and one context \`panoptes-<cluster>\` per member cluster (.../resources/clusters/<cluster>).
Use with: kubectl --kubeconfig FILE --context panoptes get pods -A

Flags:
  --server URL                    Panoptes (or kube-apiserver) base URL, e.g. https://127.0.0.1:8443
  --clusters a,b                  member cluster names
  --out FILE                      where to write (default - : stdout)
  --token TOKEN                   bearer token for the user entry
  --certificate-authority FILE    CA bundle to verify the server
  --insecure-skip-tls-verify      do not verify the server certificate
  --sim name=URL,...              also add sim-<name> contexts for simulated clusters`,
  async run(argv) {
    const { values } = parseFlags(argv, {
      server: { type: 'string' },
      clusters: { type: 'string' },
      out: { type: 'string' },
      token: { type: 'string' },
      'certificate-authority': { type: 'string' },
      'insecure-skip-tls-verify': { type: 'boolean' },
      sim: { type: 'string' },
    });
    if (!values.server) throw new UsageError('--server is required');
    try {
      new URL(values.server);
    } catch {
      throw new UsageError(`--server must be a URL, got ${JSON.stringify(values.server)}`);
    }
    const sims = splitList(values.sim).map((pair) => {
      const i = pair.indexOf('=');
      if (i <= 0) throw new UsageError(`--sim takes name=URL pairs, got ${JSON.stringify(pair)}`);
      return { name: pair.slice(0, i), url: pair.slice(i + 1) };
    });
    const out = values.out ?? '-';
    await writeKubeconfig(out, {
      sims,
      panoptes: {
        server: values.server,
        clusters: splitList(values.clusters),
        token: values.token,
        certificateAuthority: values['certificate-authority'],
        insecureSkipTlsVerify: values['insecure-skip-tls-verify'],
      },
    });
    if (out !== '-') console.error(`wrote ${out}`);
    return 0;
  },
};
