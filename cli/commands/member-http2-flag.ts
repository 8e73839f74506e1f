// --member-http2, shared by `panoptes synchro`, `panoptes apiserver` and `panoptes all-in-one`:
// whether connections to https:// members offer HTTP/2 in ALPN (member/http2.ts). Off with
// --member-http2=false, or with DISABLE_HTTP2 set in the environment as client-go reads it
// (k8s.io/apimachinery util/net: any non-empty value turns HTTP/2 off).
import { memberHttp2Default } from '../../member/client.ts';
import { UsageError } from '../command.ts';

export const memberHttp2Env = 'PANOPTES_MEMBER_HTTP2';

export const memberHttp2FlagSpec = { 'member-http2': { type: 'string' } } as const;

export const memberHttp2FlagHelp = `  --member-http2 true|false     HTTP/2 to https:// member clusters that offer it (ALPN h2): in each process,
                                one connection per member carries synchro's requests and watches, another
                                the proxy's (default ${memberHttp2Default}; env ${memberHttp2Env}; DISABLE_HTTP2
                                set, as for client-go, turns it off)`;

/** The flag, else PANOPTES_MEMBER_HTTP2, else the default; DISABLE_HTTP2 (non-empty) turns it off either way. */
export function memberHttp2Flag(values: { 'member-http2'?: string }, env: NodeJS.ProcessEnv = process.env): boolean {
  const text = values['member-http2'] ?? env[memberHttp2Env];
  let on = memberHttp2Default;
  if (text !== undefined && text !== '') {
    if (!/^(true|false)$/.test(text)) throw new UsageError(`--member-http2 ${JSON.stringify(text)}: use true or false`);
    on = text === 'true';
  }
  return on && !env.DISABLE_HTTP2;
}
