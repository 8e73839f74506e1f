// The `meta` row values: the last allocated rv (the watermark), the compacted rv, the
// installation's id, and the write protocol.
import { randomInt } from 'node:crypto';
import type { Knex } from 'knex';

export interface Meta {
  /** Every change with rv ≤ this is committed and visible: the watermark. */
  rv: number;
  /** Changes with rv ≤ this are gone: reads from an older rv get 410 Expired. */
  compactedRv: number;
}

export async function readMeta(db: Knex | Knex.Transaction): Promise<Meta> {
  const rows: Array<{ key: string; value: number | string }> = await db('meta').whereIn('key', ['rv', 'compacted_rv']).select('key', 'value');
  const get = (k: string) => Number(rows.find((r) => r.key === k)?.value ?? 0);
  return { rv: get('rv'), compactedRv: get('compacted_rv') };
}

/** The `meta` key of the write protocol (PostgreSQL): 0 serial (one lock taken first), 1 parallel (storage/ordered-commits.ts). */
export const writeProtocolKey = 'write_protocol';

/** The `meta` key of the installation's id. */
const installationKey = 'installation_id';
/** 48 random bits: 12 hex digits, a label value (and a safe integer on both backends). */
const installationIdSpace = 2 ** 48;

/**
 * The id of the Panoptes installation this database is (every process that shares it is one
 * installation): made once, at the first ask, by whichever process asks first; every later
 * ask, of any process, reads the same. 12 lowercase hex digits.
 */
export async function installationId(db: Knex): Promise<string> {
  const read = async () => (await db('meta').where({ key: installationKey }).first('value'))?.value as number | string | undefined;
  let value = await read();
  if (value === undefined) {
    await db('meta').insert({ key: installationKey, value: randomInt(1, installationIdSpace) }).onConflict('key').ignore();
    value = await read();
  }
  if (value === undefined) throw new Error('the installation id could not be stored');
  return Number(value).toString(16).padStart(12, '0');
}
