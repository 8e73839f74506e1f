// The tiny shell of a simulated container, enough for kubectl exec, attach and cp:
// echo, cat, env, hostname, ls, pwd, test -d/-f/-e, sleep, true, false, exit N, tar (cf -,
// xf - -C DIR) and sh (-c SCRIPT, or commands read from stdin) with quoting, $VAR, $?,
// `;`, `&&`, `||`, `|` and `>`/`>>` redirection.
import { posix } from 'node:path';
import { PodFs } from './fs.ts';
import { Input } from './input.ts';
import { readTar, writeTar, type TarEntry } from './tar.ts';

export interface Container {
  hostname: string;
  env: Record<string, string>;
  fs: PodFs;
}

export interface Proc {
  stdin: Input;
  out(data: Buffer | string): void;
  err(data: Buffer | string): void;
  /** Aborted when the client went away: long commands (sleep, cat) end. */
  signal: AbortSignal;
}

const statusMarker = '\u0000?\u0000';

/** Thrown by `exit N` to end the shell that runs it. */
class Exit {
  constructor(readonly code: number) {}
}

type Token = { word: string } | { op: ';' | '&&' | '||' | '|' } | { op: '>' | '>>'; fd: 1 | 2; dup?: 1 | 2 };

/** Splits a script into words and operators; quotes, backslashes and $ expansions as sh does them (no globbing). */
export function tokenize(script: string, vars: (name: string) => string): Token[] {
  const out: Token[] = [];
  let word: string | undefined;
  const flush = () => {
    if (word !== undefined) out.push({ word });
    word = undefined;
  };
  const expand = (i: number): [string, number] => {
    const rest = script.slice(i + 1);
    const m = /^(\?|\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)/.exec(rest);
    if (!m) return ['$', i + 1];
    return [vars(m[1].replace(/^\{|\}$/g, '')), i + 1 + m[1].length];
  };
  for (let i = 0; i < script.length; ) {
    const c = script[i];
    if (c === ' ' || c === '\t') {
      flush();
      i++;
    } else if (c === '\n' || c === ';') {
      flush();
      out.push({ op: ';' });
      i++;
    } else if (c === '&' && script[i + 1] === '&') {
      flush();
      out.push({ op: '&&' });
      i += 2;
    } else if (c === '|') {
      flush();
      out.push(script[i + 1] === '|' ? { op: '||' } : { op: '|' });
      i += script[i + 1] === '|' ? 2 : 1;
    } else if (c === '>' || ((c === '1' || c === '2') && word === undefined && script[i + 1] === '>')) {
      // [fd]> FILE, [fd]>> FILE, [fd]>&fd
      const fd = c === '2' ? 2 : 1;
      if (c !== '>') i++;
      flush();
      const append = script[i + 1] === '>';
      i += append ? 2 : 1;
      const dup = script[i] === '&' && (script[i + 1] === '1' || script[i + 1] === '2') ? (Number(script[i + 1]) as 1 | 2) : undefined;
      if (dup) i += 2;
      out.push({ op: append ? '>>' : '>', fd, ...(dup ? { dup } : {}) });
    } else if (c === "'") {
      const end = script.indexOf("'", i + 1);
      if (end < 0) throw new Error('Syntax error: Unterminated quoted string');
      word = (word ?? '') + script.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      let s = '';
      let j = i + 1;
      for (; j < script.length && script[j] !== '"'; ) {
        if (script[j] === '\\' && j + 1 < script.length && '"\\$`'.includes(script[j + 1])) {
          s += script[j + 1];
          j += 2;
        } else if (script[j] === '$') {
          const [v, next] = expand(j);
          s += v;
          j = next;
        } else s += script[j++];
      }
      if (j >= script.length) throw new Error('Syntax error: Unterminated quoted string');
      word = (word ?? '') + s;
      i = j + 1;
    } else if (c === '\\' && i + 1 < script.length) {
      word = (word ?? '') + script[i + 1];
      i += 2;
    } else if (c === '$') {
      const [v, next] = expand(i);
      word = (word ?? '') + v;
      i = next;
    } else if (c === '#' && word === undefined) {
      while (i < script.length && script[i] !== '\n') i++;
    } else {
      word = (word ?? '') + c;
      i++;
    }
  }
  flush();
  return out;
}

const sleepFor = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

export class Shell {
  private status = 0;
  cwd = '/';

  constructor(readonly c: Container) {}

  /** Runs one command (argv as exec gives it); resolves with its exit code. */
  async run(argv: string[], p: Proc): Promise<number> {
    try {
      this.status = await this.command(argv, p);
    } catch (e) {
      if (e instanceof Exit) return e.code;
      throw e;
    }
    return this.status;
  }

  private async script(text: string, p: Proc): Promise<number> {
    let tokens: Token[];
    try {
      // $? is the status when its command runs, not when the script is read: a marker until then.
      tokens = tokenize(text, (n) => (n === '?' ? statusMarker : this.c.env[n] ?? ''));
    } catch (e) {
      p.err(`sh: ${(e as Error).message}\n`);
      return 2;
    }
    // Split into lists joined by ; && ||, each a pipeline of commands with redirections.
    let skip = false;
    let pipeline: Token[][] = [[]];
    const runPipeline = async () => {
      const cmds = pipeline.filter((c) => c.length);
      pipeline = [[]];
      if (skip || cmds.length === 0) return;
      let input = p.stdin;
      for (const [i, cmd] of cmds.entries()) {
        const last = i === cmds.length - 1;
        const captured: Buffer[] = [];
        const words: string[] = [];
        const files: Array<{ file: string; append: boolean; data: Buffer[] }> = [];
        type Sink = (d: Buffer | string) => void;
        let out: Sink = last ? p.out : (d) => captured.push(Buffer.from(d));
        let err: Sink = p.err;
        for (let k = 0; k < cmd.length; k++) {
          const t = cmd[k];
          if ('word' in t) {
            words.push(t.word);
            continue;
          }
          if (t.op !== '>' && t.op !== '>>') continue;
          let sink: Sink;
          if (t.dup) sink = t.dup === 1 ? out : err;
          else {
            const f = cmd[k + 1];
            if (!f || !('word' in f)) {
              p.err('sh: Syntax error: newline unexpected\n');
              this.status = 2;
              return;
            }
            k++;
            const target = { file: f.word, append: t.op === '>>', data: [] as Buffer[] };
            if (f.word !== '/dev/null') files.push(target);
            sink = (d) => target.data.push(Buffer.from(d));
          }
          if (t.fd === 1) out = sink;
          else err = sink;
        }
        const sub: Proc = { stdin: input, err, signal: p.signal, out };
        this.status = await this.command(words.map((w) => w.split(statusMarker).join(String(this.status))), sub);
        const data = Buffer.concat(captured);
        for (const f of files) {
          try {
            if (f.append) this.c.fs.append(PodFs.normalize(f.file, this.cwd), Buffer.concat(f.data));
            else this.c.fs.write(PodFs.normalize(f.file, this.cwd), Buffer.concat(f.data));
          } catch (e) {
            p.err(`sh: can't create ${f.file}: ${(e as Error).message.split(': ').pop()}\n`);
            this.status = 1;
          }
        }
        if (!last) {
          input = new Input();
          input.push(data);
          input.end();
        }
      }
    };
    for (const t of tokens) {
      if ('word' in t || t.op === '>' || t.op === '>>') pipeline[pipeline.length - 1].push(t);
      else if (t.op === '|') pipeline.push([]);
      else {
        await runPipeline();
        skip = t.op === '&&' ? this.status !== 0 : t.op === '||' ? this.status === 0 : false;
      }
    }
    await runPipeline();
    return this.status;
  }

  /** `sh` without -c: commands read line by line from stdin until its end or `exit`. */
  private async interactive(p: Proc): Promise<number> {
    for (let line = await p.stdin.readLine(); line !== undefined; line = await p.stdin.readLine()) {
      if (p.signal.aborted) break;
      await this.script(line, p);
    }
    return this.status;
  }

  private async command(argv: string[], p: Proc): Promise<number> {
    const [cmd, ...args] = argv;
    const path = (a: string) => PodFs.normalize(a, this.cwd);
    switch (cmd) {
      case undefined:
        return this.status;
      case 'sh':
      case 'bash':
      case '/bin/sh':
      case '/bin/bash': {
        if (args[0] === '-c') return args[1] === undefined ? (p.err('sh: -c requires an argument\n'), 2) : this.script(args[1], p);
        return this.interactive(p);
      }
      case 'exit':
        throw new Exit(args[0] === undefined ? this.status : Number(args[0]) & 255);
      case 'true':
        return 0;
      case 'false':
        return 1;
      case 'echo': {
        const n = args[0] === '-n';
        p.out(`${(n ? args.slice(1) : args).join(' ')}${n ? '' : '\n'}`);
        return 0;
      }
      case 'hostname':
        p.out(`${this.c.hostname}\n`);
        return 0;
      case 'pwd':
        p.out(`${this.cwd}\n`);
        return 0;
      case 'cd': {
        const d = path(args[0] ?? '/');
        if (!this.c.fs.get(d)?.dir) return p.err(`sh: cd: can't cd to ${args[0]}: No such file or directory\n`), 2;
        this.cwd = d;
        return 0;
      }
      case 'env':
      case 'printenv':
        p.out(Object.entries(this.c.env).map(([k, v]) => `${k}=${v}\n`).join(''));
        return 0;
      case 'sleep': {
        const s = Number(args[0]);
        if (!Number.isFinite(s) || s < 0) return p.err(`sleep: invalid number '${args[0] ?? ''}'\n`), 1;
        await sleepFor(s * 1000, p.signal);
        return 0;
      }
      case 'cat': {
        if (args.length === 0 || (args.length === 1 && args[0] === '-')) {
          for (let c = await p.stdin.read(); c; c = await p.stdin.read()) p.out(c);
          return 0;
        }
        let code = 0;
        for (const a of args) {
          const e = this.c.fs.get(path(a));
          if (!e) (p.err(`cat: can't open '${a}': No such file or directory\n`), (code = 1));
          else if (e.dir) (p.err(`cat: read error: Is a directory\n`), (code = 1));
          else p.out(e.data);
        }
        return code;
      }
      case 'ls': {
        const targets = args.filter((a) => !a.startsWith('-'));
        let code = 0;
        for (const a of targets.length ? targets : ['.']) {
          const e = this.c.fs.get(path(a));
          if (!e) (p.err(`ls: ${a}: No such file or directory\n`), (code = 1));
          else if (!e.dir) p.out(`${a}\n`);
          else p.out(this.c.fs.list(path(a)).map((n) => `${n}\n`).join(''));
        }
        return code;
      }
      case 'mkdir':
        for (const a of args.filter((x) => !x.startsWith('-'))) this.c.fs.mkdir(path(a));
        return 0;
      case 'test':
      case '[': {
        const a = cmd === '[' ? args.slice(0, -1) : args;
        const e = a[1] === undefined ? undefined : this.c.fs.get(path(a[1]));
        if (a[0] === '-d') return e?.dir ? 0 : 1;
        if (a[0] === '-f') return e && !e.dir ? 0 : 1;
        if (a[0] === '-e') return e ? 0 : 1;
        return a.length === 1 && a[0] !== '' ? 0 : 1;
      }
      case 'tar':
        return this.tar(args, p);
      default:
        p.err(`sh: ${cmd}: not found\n`);
        return 127;
    }
  }

  /** `tar cf - PATH...` and `tar xf - [-C DIR]` (also -xmf, --no-same-owner ...): what kubectl cp runs. */
  private async tar(args: string[], p: Proc): Promise<number> {
    const flags = args.filter((a) => a.startsWith('-') && a !== '-' && !a.startsWith('--')).join('') + (args[0] && !args[0].startsWith('-') ? args[0] : '');
    const dirAt = args.indexOf('-C');
    const dir = dirAt >= 0 ? args[dirAt + 1] : undefined;
    const operands = args.filter((a, i) => !a.startsWith('-') && i !== dirAt + 1 && !(i === 0 && /^[cxtvfmzp]+$/.test(a)));
    if (flags.includes('c')) {
      const base = dir ? path(dir, this.cwd) : this.cwd;
      const entries: TarEntry[] = [];
      let code = 0;
      for (const o of operands) {
        const root = PodFs.normalize(o, base);
        if (!this.c.fs.get(root)) {
          p.err(`tar: ${o}: No such file or directory\n`);
          code = 2;
          continue;
        }
        // Names as given (relative stays relative; a leading / is removed, as GNU tar does).
        const shown = o.replace(/^\/+/, '').replace(/\/+$/, '') || '.';
        for (const abs of this.c.fs.walk(root)) {
          const e = this.c.fs.get(abs)!;
          const rel = abs === root ? shown : posix.join(shown, posix.relative(root, abs));
          entries.push({ name: rel, dir: e.dir, data: e.data, mode: e.mode, mtime: e.mtime });
        }
      }
      if (code && operands.length === 1) p.err('tar: Exiting with failure status due to previous errors\n');
      p.out(writeTar(entries));
      return code;
    }
    if (flags.includes('x')) {
      const base = dir ? path(dir, this.cwd) : this.cwd;
      if (!this.c.fs.get(base)?.dir) return p.err(`tar: ${dir}: Cannot open: No such file or directory\n`), 2;
      let entries: TarEntry[];
      try {
        entries = readTar(await p.stdin.readAll());
      } catch (e) {
        p.err(`${(e as Error).message}\n`);
        return 2;
      }
      for (const e of entries) {
        const target = PodFs.normalize(e.name, base);
        if (!target.startsWith(base === '/' ? '/' : `${base}/`) && target !== base) continue; // tar refuses names that leave DIR
        if (e.dir) this.c.fs.mkdir(target);
        else this.c.fs.write(target, e.data, e.mode);
      }
      return 0;
    }
    p.err('tar: You must specify one of the \'-Acdtrux\' options\n');
    return 2;
  }
}

function path(a: string, cwd: string): string {
  return PodFs.normalize(a, cwd);
}
