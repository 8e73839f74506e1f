// Polls files for changes (stat every interval) and calls back when any changed. Editors and
// Kubernetes ConfigMap mounts replace files (a ConfigMap update swaps the `..data` symlink the
// mounted path points through), which fs.watch misses; stat follows symlinks, so a swap shows
// as a new inode. A file that does not exist yet is watched too: its creation is a change.
import { unwatchFile, watchFile } from 'node:fs';

export class FileWatcher {
  private files: string[] = [];
  private readonly listener = () => this.onChange();

  constructor(
    private readonly intervalMs: number,
    private readonly onChange: () => void,
  ) {}

  /** Watches exactly these files from now on (no-op when unchanged). */
  watch(files: string[]): void {
    const next = [...new Set(files)];
    if (next.join('\n') === this.files.join('\n')) return;
    this.close();
    this.files = next;
    for (const f of this.files) watchFile(f, { interval: this.intervalMs, persistent: false }, this.listener);
  }

  close(): void {
    for (const f of this.files) unwatchFile(f, this.listener);
    this.files = [];
  }
}
