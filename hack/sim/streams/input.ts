// A process's stdin in the simulated container: chunks pushed by the stream protocol, read
// by the shell as chunks, lines or everything up to end of input.
export class Input {
  private chunks: Buffer[] = [];
  private ended = false;
  private wake: (() => void) | undefined;

  push(b: Buffer): void {
    if (this.ended || b.length === 0) return;
    this.chunks.push(b);
    this.notify();
  }

  end(): void {
    this.ended = true;
    this.notify();
  }

  get isEnded(): boolean {
    return this.ended && this.chunks.length === 0;
  }

  private notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** The next chunk; undefined at end of input. */
  async read(): Promise<Buffer | undefined> {
    while (this.chunks.length === 0) {
      if (this.ended) return undefined;
      await new Promise<void>((r) => (this.wake = r));
    }
    return this.chunks.shift();
  }

  async readAll(): Promise<Buffer> {
    const out: Buffer[] = [];
    for (let c = await this.read(); c; c = await this.read()) out.push(c);
    return Buffer.concat(out);
  }

  /** The next line without its end (\n, \r or \r\n); undefined at end of input. */
  async readLine(): Promise<string | undefined> {
    let acc = Buffer.alloc(0);
    for (;;) {
      const i = acc.findIndex((b) => b === 10 || b === 13);
      if (i >= 0) {
        const line = acc.subarray(0, i).toString('utf8');
        let rest = acc.subarray(i + 1);
        if (acc[i] === 13 && rest[0] === 10) rest = rest.subarray(1);
        if (rest.length) this.chunks.unshift(Buffer.from(rest));
        return line;
      }
      const c = await this.read();
      if (!c) return acc.length ? acc.toString('utf8') : undefined;
      acc = Buffer.concat([acc, c]);
    }
  }
}
