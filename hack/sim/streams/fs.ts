// A container's in-memory filesystem for the simulated exec shell: regular files and
// directories by absolute path, one per (namespace, pod, container), kept while the process
// runs (so `kubectl cp` to a pod and back finds its files).
import { posix } from 'node:path';

export interface FsEntry {
  dir: boolean;
  data: Buffer;
  mode: number;
  mtime: number;
}

export class PodFs {
  private readonly entries = new Map<string, FsEntry>();

  constructor(hostname: string) {
    for (const d of ['/', '/etc', '/tmp', '/var', '/var/log', '/app']) this.mkdir(d);
    this.write('/etc/hostname', Buffer.from(`${hostname}\n`));
    this.write('/etc/os-release', Buffer.from('NAME="Panoptes simulated container"\nID=panoptes-sim\n'));
    this.write('/app/README', Buffer.from('This container runs in a simulated cluster.\n'));
  }

  static normalize(path: string, cwd = '/'): string {
    return posix.resolve(cwd, path);
  }

  get(path: string): FsEntry | undefined {
    return this.entries.get(PodFs.normalize(path));
  }

  mkdir(path: string): void {
    const p = PodFs.normalize(path);
    if (p !== '/') this.mkdir(posix.dirname(p));
    if (!this.entries.get(p)?.dir) this.entries.set(p, { dir: true, data: Buffer.alloc(0), mode: 0o755, mtime: Date.now() });
  }

  /** Writes a file (its directories are made). Throws when the path is a directory. */
  write(path: string, data: Buffer, mode = 0o644): void {
    const p = PodFs.normalize(path);
    if (this.entries.get(p)?.dir) throw new Error(`${path}: Is a directory`);
    this.mkdir(posix.dirname(p));
    this.entries.set(p, { dir: false, data, mode, mtime: Date.now() });
  }

  append(path: string, data: Buffer): void {
    const old = this.get(path);
    this.write(path, old && !old.dir ? Buffer.concat([old.data, data]) : data);
  }

  /** The names directly in a directory, sorted. */
  list(path: string): string[] {
    const p = PodFs.normalize(path);
    const prefix = p === '/' ? '/' : `${p}/`;
    const names: string[] = [];
    for (const k of this.entries.keys()) {
      if (k !== p && k.startsWith(prefix) && !k.slice(prefix.length).includes('/')) names.push(k.slice(prefix.length));
    }
    return names.sort();
  }

  /** Every path at or below `path`, parents first. */
  walk(path: string): string[] {
    const p = PodFs.normalize(path);
    const prefix = p === '/' ? '/' : `${p}/`;
    return [...this.entries.keys()].filter((k) => k === p || k.startsWith(prefix)).sort();
  }
}
