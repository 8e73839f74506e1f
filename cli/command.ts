// One subcommand of the `panoptes` CLI. Each lives in cli/commands/<name>.ts.
import { parseArgs, type ParseArgsConfig } from 'node:util';

export interface Command {
  name: string;
  /** One line for `panoptes --help`. */
  summary: string;
  /** Full help text for `panoptes <name> --help`. */
  usage: string;
  /** Runs the command; resolves to the process exit code. */
  run(argv: string[]): Promise<number>;
}

/** A bad flag or argument: printed with the command's usage, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The command has said why it stops (a log line): exit with `code`, printing nothing more. */
export class ExitError extends Error {
  override name = 'ExitError';
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * Strict flag parsing shared by every command: unknown flags, missing values and stray
 * positionals become a UsageError instead of being ignored.
 */
export function parseFlags<O extends Options>(argv: string[], options: O, allowPositionals = false) {
  try {
    return parseArgs({ args: argv, options: { ...options, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** Parses a non-negative integer flag value, or throws a UsageError naming the flag. */
export function intFlag(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a non-negative integer, got ${JSON.stringify(value)}`);
  return Number(value);
}

/** Parses a size in bytes: `N`, or with a binary suffix `NKi`, `NMi`, `NGi` (as Kubernetes quantities). */
export function sizeFlag(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(value);
  if (!m) throw new UsageError(`--${name} must be a size in bytes like 1048576, 512Ki, 64Mi or 1Gi, got ${JSON.stringify(value)}`);
  return Number(m[1]) * { '': 1, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 }[(m[2] ?? '') as '' | 'Ki' | 'Mi' | 'Gi'];
}

/** Parses a duration such as `500ms`, `30s`, `10m`, `24h` into milliseconds. */
export function durationFlag(name: string, value: string | undefined, fallbackMs: number): number {
  if (value === undefined) return fallbackMs;
  const m = /^(\d+)(ms|s|m|h)$/.exec(value);
  if (!m) throw new UsageError(`--${name} must be a duration like 500ms, 30s, 10m or 24h, got ${JSON.stringify(value)}`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
  return Number(m[1]) * unit;
}

/** Resolves on SIGINT or SIGTERM. */
export function waitForSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (sig: string) => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(sig);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}
