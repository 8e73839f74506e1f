// SQL types of the columns written with multi-row inserts (PostgreSQL reads rows from JSON
// and needs them). Kept beside the schema: a column added there with a non-text type is
// added here too.
const nonText: Record<string, Record<string, string>> = {
  objects: { id: 'bigint', rv: 'bigint' },
  object_labels: { obj_id: 'bigint', num: 'bigint' },
  changes: { rv: 'bigint', ts: 'bigint', epoch: 'bigint' },
  object_counts: { n: 'bigint' },
};

export function columnType(table: string, column: string): string {
  return nonText[table]?.[column] ?? 'text';
}
