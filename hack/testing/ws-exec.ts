// A client of kube's remote command protocol over WebSocket (v5.channel.k8s.io), for tests
// and benchmarks: one exec to its end (stdout, stderr, the error channel's Status), or an
// open session whose stdin and stdout are used line by line.
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import type { Duplex } from 'node:stream';
import { decodeFrames, encodeFrame, opcodes } from '../sim/streams/websocket.ts';

export interface ExecResult {
  stdout: string;
  stderr: string;
  status: Record<string, unknown> | undefined;
}

export interface WsSession {
  /** Writes to stdin (channel 0). */
  write(data: string): void;
  /** Resolves with the next stdout bytes (bounded in time). */
  read(timeoutMs?: number): Promise<string>;
  /** Ends stdin (v5 close signal) and resolves with the whole exchange once the server closes. */
  finish(timeoutMs?: number): Promise<ExecResult>;
  socket: Duplex;
}

/** Opens an exec (or attach) WebSocket to `url` (a pods/<name>/exec?... URL with its query). */
export function openExec(url: string, headers: Record<string, string> = {}): Promise<WsSession> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, {
      headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': randomBytes(16).toString('base64'), 'Sec-WebSocket-Protocol': 'v5.channel.k8s.io', ...headers },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => reject(new Error(`upgrade refused: ${res.statusCode} ${body}`)));
    });
    req.on('error', reject);
    req.on('upgrade', (_res, socket: Duplex, head: Buffer) => {
      let buf: Buffer = head;
      const out: ExecResult = { stdout: '', stderr: '', status: undefined };
      let pending = '';
      let wake: (() => void) | undefined;
      let closed = false;
      const done = new Promise<void>((r) => socket.once('close', () => ((closed = true), wake?.(), r())));
      const onData = (d: Buffer) => {
        buf = buf.length ? Buffer.concat([buf, d]) : d;
        const { frames, rest } = decodeFrames(buf);
        buf = rest;
        for (const f of frames) {
          if (f.opcode === opcodes.close) socket.end();
          if (f.opcode !== opcodes.binary || f.payload.length === 0) continue;
          const text = f.payload.subarray(1).toString('utf8');
          if (f.payload[0] === 1) {
            out.stdout += text;
            pending += text;
            wake?.();
          } else if (f.payload[0] === 2) out.stderr += text;
          else if (f.payload[0] === 3) out.status = JSON.parse(text) as Record<string, unknown>;
        }
      };
      socket.on('data', onData);
      socket.on('error', () => socket.destroy());
      if (head.length) onData(Buffer.alloc(0));
      const send = (payload: Buffer) => socket.write(encodeFrame(opcodes.binary, payload, randomBytes(4)));
      resolve({
        socket,
        write: (data) => send(Buffer.concat([Buffer.from([0]), Buffer.from(data)])),
        async read(timeoutMs = 5000) {
          const deadline = Date.now() + timeoutMs;
          while (pending === '' && !closed && Date.now() < deadline) {
            await new Promise<void>((r) => {
              const t = setTimeout(r, Math.max(1, deadline - Date.now()));
              wake = () => (clearTimeout(t), r());
            });
          }
          const got = pending;
          pending = '';
          return got;
        },
        async finish(timeoutMs = 5000) {
          send(Buffer.from([255, 0]));
          const timer = setTimeout(() => socket.destroy(), timeoutMs);
          await done;
          clearTimeout(timer);
          return out;
        },
      });
    });
    req.end();
  });
}

/** Runs one command to its end. */
export async function execOnce(url: string, headers: Record<string, string> = {}): Promise<ExecResult> {
  const s = await openExec(url, headers);
  return s.finish();
}
