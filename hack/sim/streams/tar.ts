// The tar subset `kubectl cp` needs (it runs `tar cf - <path>` and `tar -xmf - -C <dir>` in
// the container): POSIX ustar headers of regular files and directories, 512-byte blocks,
// two zero blocks at the end. PAX and GNU long-name records are read (their names used).
export interface TarEntry {
  name: string;
  dir: boolean;
  data: Buffer;
  mode: number;
  mtime: number;
}

const block = 512;

function octal(n: number, width: number): string {
  return `${n.toString(8).padStart(width - 1, '0')}\0`;
}

function header(e: TarEntry): Buffer {
  const h = Buffer.alloc(block);
  let name = e.dir && !e.name.endsWith('/') ? `${e.name}/` : e.name;
  let prefix = '';
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf('/', name.length - 2);
    prefix = name.slice(0, cut);
    name = name.slice(cut + 1);
  }
  h.write(name, 0, 100);
  h.write(octal(e.mode & 0o7777, 8), 100);
  h.write(octal(0, 8), 108);
  h.write(octal(0, 8), 116);
  h.write(octal(e.dir ? 0 : e.data.length, 12), 124);
  h.write(octal(Math.floor(e.mtime / 1000), 12), 136);
  h.write('        ', 148);
  h.write(e.dir ? '5' : '0', 156);
  h.write('ustar\0', 257);
  h.write('00', 263);
  h.write(prefix, 345, 155);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return h;
}

export function writeTar(entries: TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    parts.push(header(e));
    if (!e.dir && e.data.length) {
      parts.push(e.data);
      const pad = (block - (e.data.length % block)) % block;
      if (pad) parts.push(Buffer.alloc(pad));
    }
  }
  parts.push(Buffer.alloc(block * 2));
  return Buffer.concat(parts);
}

const text = (b: Buffer) => {
  const z = b.indexOf(0);
  return b.subarray(0, z < 0 ? b.length : z).toString('utf8');
};

/** Reads a tar stream's regular files and directories; throws on a malformed one. */
export function readTar(buf: Buffer): TarEntry[] {
  const out: TarEntry[] = [];
  let off = 0;
  let longName: string | undefined;
  while (off + block <= buf.length) {
    const h = buf.subarray(off, off + block);
    if (h.every((b) => b === 0)) break;
    let sum = 0;
    for (let i = 0; i < block; i++) sum += i >= 148 && i < 156 ? 32 : h[i];
    if (parseInt(text(h.subarray(148, 156)).trim(), 8) !== sum) throw new Error('tar: checksum mismatch (not a tar archive?)');
    const size = parseInt(text(h.subarray(124, 136)).trim() || '0', 8);
    const type = String.fromCharCode(h[156] || 48);
    const data = buf.subarray(off + block, off + block + size);
    if (data.length < size) throw new Error('tar: unexpected end of archive');
    off += block + Math.ceil(size / block) * block;
    const prefix = text(h.subarray(345, 500));
    let name = longName ?? (prefix ? `${prefix}/${text(h.subarray(0, 100))}` : text(h.subarray(0, 100)));
    longName = undefined;
    if (type === 'L') {
      longName = text(data);
      continue;
    }
    if (type === 'x') {
      const m = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(data.toString('utf8'));
      if (m) longName = m[1];
      continue;
    }
    if (type === 'g') continue;
    if (type !== '0' && type !== '5' && type !== '\0') continue; // links, devices: not kept
    const dir = type === '5' || name.endsWith('/');
    if (dir) name = name.replace(/\/+$/, '');
    out.push({ name, dir, data: Buffer.from(data), mode: parseInt(text(h.subarray(100, 108)).trim() || '644', 8), mtime: parseInt(text(h.subarray(136, 148)).trim() || '0', 8) * 1000 });
  }
  return out;
}
