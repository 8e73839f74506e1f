// What a handler answers: a status, a type, a body and headers, returned instead of written to
// the Koa context (so a timed-out handler's late answer is simply dropped).
import type { Compression } from './compression.ts';

export interface Reply {
  status?: number;
  type: string;
  body: string | Buffer;
  headers?: Record<string, string | string[]>;
  /** Which of kube-apiserver's compression paths this answer takes (apiserver/endpoints/compression.ts); default 'api-object'. */
  compression?: Compression;
}
