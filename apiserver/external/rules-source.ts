// The external metrics file as the server sees it: read at start, watched (stat polling:
// editors and ConfigMap mounts replace files) and re-read when it changes. A file that cannot
// be used keeps the last good rules in effect and says why; a missing file is no rules (it
// is picked up once it appears, as an optional ConfigMap mount is).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { FileWatcher } from '../../lib/file-watcher.ts';
import type { Logger } from '../../lib/log.ts';
import { emptyRuleSet, FileError, parseRules, type RuleSet } from './rules.ts';

export interface RulesSourceOptions {
  /** The metrics file; none: only the plain counts are served. */
  file?: string;
  /** How often the file is checked for changes (default 1000 ms). */
  reloadIntervalMs?: number;
  log: Logger;
  /** Called after every load attempt: whether it was usable, and the rule counts. */
  onLoad?: (ok: boolean, set: RuleSet) => void;
}

export class RulesSource {
  private set: RuleSet = emptyRuleSet();
  private hash = '';
  private error?: string;
  private watcher?: FileWatcher;

  constructor(private readonly opts: RulesSourceOptions) {}

  get file(): string | undefined {
    return this.opts.file;
  }

  /** The rules in effect. */
  current(): RuleSet {
    return this.set;
  }

  /** Why the file cannot be used now (the last good rules are in effect), if it cannot. */
  fileError(): string | undefined {
    return this.error;
  }

  /** Loads the file and starts watching it. */
  start(): void {
    if (!this.opts.file) return;
    this.reload();
    this.watcher = new FileWatcher(this.opts.reloadIntervalMs ?? 1000, () => this.reload());
    this.watcher.watch([this.opts.file]);
  }

  stop(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  /** Reads the file now; true when the rules in effect changed. */
  reload(): boolean {
    const file = this.opts.file;
    if (!file) return false;
    const log = this.opts.log;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        // No file (an optional ConfigMap not created): no declared metrics.
        const changed = this.hash !== 'absent';
        if (changed) log.warn('external metrics file does not exist: no declared metrics until it does', { file });
        this.hash = 'absent';
        this.error = undefined;
        this.set = emptyRuleSet();
        this.opts.onLoad?.(true, this.set);
        return changed;
      }
      return this.fail(`cannot read ${file}: ${code ?? (err as Error).message}`);
    }
    const hash = createHash('sha256').update(text).digest('hex');
    if (hash === this.hash) return false;
    let set: RuleSet;
    try {
      set = parseRules(text);
    } catch (err) {
      if (!(err instanceof FileError)) throw err;
      this.hash = hash;
      return this.fail(`${file}: ${err.message}`);
    }
    this.hash = hash;
    this.set = set;
    if (this.error) log.info('external metrics file is usable again', { file });
    this.error = undefined;
    for (const p of set.problems) log.error('invalid external metric rule; the other rules are used', { file, problem: p });
    log.info('external metrics loaded', { file, metrics: [...set.rules.keys()], invalid: [...set.invalid.keys()] });
    this.opts.onLoad?.(true, set);
    return true;
  }

  private fail(message: string): boolean {
    const full = `${message} (the last good rules stay in effect)`;
    if (full !== this.error) this.opts.log.error('cannot use the external metrics file', { error: full });
    this.error = full;
    this.opts.onLoad?.(false, this.set);
    return false;
  }
}
