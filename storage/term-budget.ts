// What one request may ask of SQL: a budget of terms and of bound values, counted from the
// query before any statement is built, so that valid terms never overflow an engine (a 500
// that said "too many SQL variables" or "Expression tree is too large"): a request past it is
// a 400 that names the budget and the terms that spend it.
//
// The engines' limits, as built here: SQLite (better-sqlite3 12, SQLite 3.53) binds at most
// 32,766 values in one statement (SQLITE_MAX_VARIABLE_NUMBER's default since 3.32) and parses
// expressions at most 1,000 levels deep (SQLITE_MAX_EXPR_DEPTH: a chain of 999 ANDed
// conditions); PostgreSQL's protocol carries at most 65,535 parameters. So:
// - terms: at most 100 per request (each label and field requirement, JSON path term, fuzzy
//   name, owner term, time bound, orderBy key, and each of the clusters, namespaces, names and
//   ownerUID lists): each is at most 3 conditions, so a statement's conditions stay about a
//   third of SQLite's depth, a collection's OR over its 32 kinds included.
// - values: at most 10,000 bound in any one statement of the request (a third of SQLite's
//   limit). A list's statements bind its kind's values once per kind (a collection: once for
//   each), and its page once per ordered scan (storage/list-scan.ts: one per namespace or
//   cluster, merged): `valuesPerKind` is an upper bound of what one scan of one kind binds
//   (term-budget.test.ts checks it against every statement a list makes), and list-scan.ts
//   makes no more scans than the budget leaves room for (scanRoom).
import { StatusError } from '../kube/status.ts';
import type { AggregateQuery } from './aggregate.ts';
import type { ListQuery } from './types.ts';

export const termBudget = { terms: 100, values: 10_000 } as const;

/** Values every scan binds whatever its terms: group and resource, a snapshot rv, the scan's pins, the continue key, the limit. */
const perScanValues = 16;

/** One line of the count: what the request calls the terms, how many terms and values they add to each kind. */
interface Spend {
  what: string;
  terms: number;
  values: number;
}

/** What each of a list query's terms spends, for one kind. */
function spends(q: Omit<ListQuery, 'kinds'>): Spend[] {
  const out: Spend[] = [];
  const add = (what: string, terms: number, values: number) => {
    if (terms > 0) out.push({ what, terms, values });
  };
  const list = (what: string, values: string[] | undefined) => values && add(what, 1, values.length);
  list('clusters', q.clusters);
  list('namespaces', q.namespaces);
  list('names', q.names);
  list('ownerUID', q.ownerUIDs);
  add('fuzzyName', q.nameContains?.length ?? 0, 2 * (q.nameContains?.length ?? 0));
  add('createdSince/createdBefore', (q.createdSince !== undefined ? 1 : 0) + (q.createdBefore !== undefined ? 1 : 0), 4);
  // The chain: group, resource, names, uids, clusters, its depth, the listed kind and the levels.
  if (q.owners) add('ownerName/ownerUID with ownerSeniority', 1, 7 + (q.owners.names?.length ?? 0) + (q.owners.uids?.length ?? 0) + (q.clusters?.length ?? 0));
  const labels = q.labelSelector ?? [];
  add('labelSelector', labels.length, labels.reduce((n, r) => n + 1 + Math.max(1, r.values.length), 0));
  add('fieldSelector', q.fieldSelector?.length ?? 0, 2 * (q.fieldSelector?.length ?? 0));
  // A path's bindings: two for each [*] level, four for its end, its values twice (an indexed field's index and document).
  const json = q.jsonFields ?? [];
  add('JSON path terms', json.length, json.reduce((n, r) => n + 2 * r.path.filter((k) => k === null).length + 4 + 2 * r.values.length, 0));
  const order = q.orderBy ?? [];
  if (order.length) {
    // Each key (a path's four bindings) in the select, the ORDER BY and the "after the last row"
    // condition; that condition with two directions is a chain of (i + 1)-term arms.
    const cols = order.length + 3;
    add('orderBy', order.length, 3 * 4 * order.length + ((cols * (cols + 1)) / 2) * 5);
  }
  return out;
}

/** The count of a query: its terms, the values one scan of one kind binds, and how many kinds. */
function count(q: ListQuery, extra: Spend[] = []): { terms: number; valuesPerKind: number; kinds: number; spent: Spend[] } {
  const spent = [...spends(q), ...extra];
  return {
    terms: spent.reduce((n, s) => n + s.terms, 0),
    valuesPerKind: perScanValues + spent.reduce((n, s) => n + s.values, 0),
    kinds: q.kinds?.length ?? 1,
    spent,
  };
}

/** An upper bound of the values one scan of one kind of `q` binds (term-budget.test.ts holds every statement to it). */
export function valuesPerKind(q: ListQuery): number {
  return count(q).valuesPerKind;
}

/** How many scans per kind a page of `q` may merge within the value budget (at least one). */
export function scanRoom(q: ListQuery): number {
  const c = count(q);
  return Math.max(1, Math.floor(termBudget.values / (c.valuesPerKind * c.kinds)));
}

/** The 400 of a request past its budget. */
export class TermBudgetError extends StatusError {
  override name = 'TermBudgetError';
}

const n = (x: number) => x.toLocaleString('en');

function check(c: ReturnType<typeof count>): void {
  const top = [...c.spent].sort((a, b) => b.values - a.values || b.terms - a.terms);
  if (c.terms > termBudget.terms) {
    const by = top.filter((s) => s.terms > 0).sort((a, b) => b.terms - a.terms).map((s) => `${s.what} ${n(s.terms)}`).join(', ');
    throw new TermBudgetError('BadRequest', `too many search terms: this request has ${n(c.terms)} (${by}), more than the ${termBudget.terms} a request may have; give fewer`, {
      causes: [{ reason: 'FieldValueTooLong', message: `${n(c.terms)} terms, budget ${termBudget.terms}` }],
    });
  }
  const values = c.valuesPerKind * c.kinds;
  if (values > termBudget.values) {
    const by = top.filter((s) => s.values > 0).map((s) => `${s.what} ${n(s.values)}`).join(', ');
    const kinds = c.kinds > 1 ? `, for each of its ${c.kinds} kinds` : '';
    throw new TermBudgetError('BadRequest', `too many search values: this request would bind ${n(values)} values into one SQL statement (${by}${kinds}), more than the ${n(termBudget.values)} a request may; give fewer values${c.kinds > 1 ? ' or fewer kinds' : ''}`, {
      causes: [{ reason: 'FieldValueTooLong', message: `${n(values)} values, budget ${n(termBudget.values)}` }],
    });
  }
}

/** Throws a 400 (TermBudgetError) for a list or watch past the budget; before any SQL. */
export function checkTermBudget(q: ListQuery): void {
  check(count(q));
}

/** The same for an aggregate: its selection and its conditions on the objects' JSON. */
export function checkAggregateBudget(q: Pick<AggregateQuery, 'select' | 'match' | 'path'>): void {
  const match = q.match ?? [];
  const extra: Spend[] = [{ what: 'match', terms: match.length, values: match.reduce((m, r) => m + 8 + r.values.length, 0) + (q.path ? 4 : 0) }];
  check(count(q.select as ListQuery, extra));
}
