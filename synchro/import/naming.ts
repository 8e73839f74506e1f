// The name of an imported Cluster: prefix + template ({name}, {namespace}, {context}), which
// must be a DNS label (a Cluster's name is in URLs). A name that is not one is made one
// (Sanitize: lowercase, every other character `-`, cut to 63 with a hash of the whole so two
// long names stay apart) or refused (Reject).
import { createHash } from 'node:crypto';
import type { InvalidNameRule } from '../../api/cluster-source.ts';
import { clusterNameProblem } from '../../api/cluster.ts';
import type { ImportCandidate } from './candidate.ts';

export function clusterName(c: ImportCandidate, naming: { template: string; prefix: string; invalidNames: InvalidNameRule }): { name: string } | { problem: string } {
  // With one Cluster per context and no {context} in the template, each context still gets a name of its own.
  const template = c.context !== undefined && !naming.template.includes('{context}') ? `${naming.template}-{context}` : naming.template;
  const raw = naming.prefix + template.replace(/\{(name|namespace|context)\}/g, (_m, v: string) => (v === 'name' ? c.baseName : v === 'namespace' ? c.namespace : (c.context ?? '')));
  const problem = clusterNameProblem(raw);
  if (!problem) return { name: raw };
  if (naming.invalidNames === 'Reject') return { problem: `${JSON.stringify(raw)} is not a Cluster name: ${problem} (spec.naming.invalidNames: Reject)` };
  let name = raw.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/-+/g, '-').replace(/^-+|-+$/g, '');
  if (name.length > 63 || name !== raw.toLowerCase()) {
    const hash = createHash('sha256').update(raw).digest('hex').slice(0, 6);
    name = `${name.slice(0, 56).replace(/-+$/, '')}-${hash}`.replace(/^-/, '');
  }
  return clusterNameProblem(name) ? { problem: `${JSON.stringify(raw)} cannot be made a Cluster name` } : { name };
}
