// Where synchro's cluster configuration comes from: clusters.yaml or the contexts of a
// kubeconfig, read again when one of their files changes. A file that cannot be read keeps
// the last good configuration in effect (or, before there was one, none: the process does
// not join the synchro members until it can work), and says so.
import { FileWatcher } from '../../lib/file-watcher.ts';
import type { Logger } from '../../lib/log.ts';
import { ConfigError, loadClustersFile, loadKubeconfigClusters, type ParsedConfig } from '../../member/cluster-config.ts';
import type { SynchroMetrics } from '../metrics/metrics.ts';

export interface ConfigSourceOptions {
  clustersFile?: string;
  kubeconfig?: string;
  contexts?: 'all' | string[];
  resources?: string[];
  /** How often the files are checked for changes (default 1000 ms). */
  reloadIntervalMs?: number;
  metrics: SynchroMetrics;
  log: Logger;
  /** A file changed: read() again. */
  onFileChange: () => void;
}

export class ConfigSource {
  /** The configuration in effect; undefined until one could be read. */
  current?: ParsedConfig;
  /** The files' current problem, while they cannot be read. */
  error?: string;
  private lastKey = '';
  private readonly watcher: FileWatcher;

  constructor(private readonly opts: ConfigSourceOptions) {
    this.watcher = new FileWatcher(opts.reloadIntervalMs ?? 1000, opts.onFileChange);
    const file = opts.clustersFile ?? opts.kubeconfig;
    if (file) this.watcher.watch([file]);
  }

  private load(): ParsedConfig {
    const { clustersFile, kubeconfig } = this.opts;
    if (clustersFile) return loadClustersFile(clustersFile);
    if (kubeconfig) return loadKubeconfigClusters(kubeconfig, this.opts.contexts ?? 'all', this.opts.resources);
    return { clusters: [], invalid: [], files: [] };
  }

  /** Reads the files; true when the configuration in effect changed. */
  read(): boolean {
    const { metrics, log } = this.opts;
    let next: ParsedConfig;
    try {
      next = this.load();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      const message = `${err.message} (${this.current ? 'the last good configuration stays in effect' : 'this process joins the synchro members once it can be read'})`;
      if (message !== this.error) {
        this.error = message;
        metrics.errors.inc({ cluster: '', kind: 'config' });
        log.error('cannot use the cluster configuration', { error: message });
      }
      return false;
    }
    this.watcher.watch(next.files);
    if (this.error) log.info('cluster configuration is valid again');
    this.error = undefined;
    const key = JSON.stringify([next.clusters.map((c) => [c.name, c.fingerprint]), next.invalid]);
    if (key === this.lastKey) return false;
    this.lastKey = key;
    for (const i of next.invalid) {
      metrics.errors.inc({ cluster: i.name ?? '', kind: 'config' });
      log.error('invalid cluster entry; the other clusters are not affected', { cluster: i.name, error: i.message });
    }
    this.current = next;
    return true;
  }

  close(): void {
    this.watcher.close();
  }
}
