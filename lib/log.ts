// Structured logs: one JSON object per line on stderr, with a level, a component and fields.
// Every line goes through the one redactor (lib/redact.ts): its message and every field.
import { redact, redactDeep } from './redact.ts';

export type Level = 'debug' | 'info' | 'warn' | 'error';

const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };
let minLevel: Level = (process.env.PANOPTES_LOG_LEVEL as Level | undefined) ?? 'info';
if (!(minLevel in order)) minLevel = 'info';

export function setLogLevel(level: Level): void {
  minLevel = level;
}

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

function errorFields(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) out[k] = v instanceof Error ? { message: v.message, name: v.name } : v;
  return out;
}

export function logger(component: string, base: Record<string, unknown> = {}): Logger {
  const write = (level: Level, msg: string, fields: Record<string, unknown> = {}) => {
    if (order[level] < order[minLevel]) return;
    const line = { time: new Date().toISOString(), level, component, msg: redact(msg), ...redactDeep({ ...base, ...errorFields(fields) }) };
    process.stderr.write(JSON.stringify(line) + '\n');
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    child: (fields) => logger(component, { ...base, ...fields }),
  };
}
