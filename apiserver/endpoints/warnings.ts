// Warning headers (RFC 7234 `299 - "text"`) for reads that include clusters that are not
// Ready: their objects are served from storage as last seen and may be stale. The text (a
// cluster's status message among it) goes through the one redactor.
import { redact } from '../../lib/redact.ts';
import { clusterObjectsCluster } from '../../storage/cluster-objects.ts';
import type { Catalog } from '../discovery/catalog.ts';

/** One Warning header value (`299 - "text"`), the text redacted, on one line, at most 240 characters. */
export function warningValue(text: string): string {
  const clean = redact(text.replace(/[\r\n\t]+/g, ' ')).slice(0, 240);
  return `299 - "${clean.replace(/["\\]/g, (c) => `\\${c}`)}"`;
}

/** One Warning value per cluster read that is not Ready (at most 10, then a summary). */
export function staleWarnings(catalog: Catalog, clusters: string[]): string[] {
  const out: string[] = [];
  const notReady: string[] = [];
  for (const name of clusters) {
    if (name === clusterObjectsCluster) continue; // the Cluster objects themselves: no member behind them
    const rec = catalog.cluster(name);
    const status = rec?.status ?? {};
    if (status.ready === true) continue;
    notReady.push(name);
    if (out.length >= 10) continue;
    const phase = typeof status.phase === 'string' ? status.phase : rec ? 'Pending' : 'NotRegistered';
    const msg = typeof status.message === 'string' && status.message ? `: ${status.message}` : '';
    const since = typeof status.lastTransitionTime === 'string' ? ` since ${status.lastTransitionTime}` : '';
    out.push(warningValue(`cluster ${name} is not Ready (${phase}${since}${msg}); its objects are served as last synced and may be stale`));
  }
  if (notReady.length > 10) out.push(warningValue(`${notReady.length - 10} more clusters are not Ready`));
  return out;
}
