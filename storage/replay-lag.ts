// How far behind the primary a standby is, in time: how long the primary has had an rv that the
// standby still lacks. Both sides are rv watermarks (the primary's `meta` rv as the pool reads it,
// the standby's in its own snapshot: the database's own replay state), and time is a monotonic
// clock (performance.now): a step of the wall clock changes nothing. An idle primary (no commits)
// leaves a caught-up standby 0 behind, however long ago it last replayed a commit.
//
// The primary's watermarks are kept as marks (rv, first seen at), rv increasing. A standby at
// rv S is behind since the first mark above S. Marks no standby needs (at or below every
// standby's rv) are dropped; past `maxMarks`, the two neighbours closest in time are merged,
// the older time with the newer rv, so a standby is never reported less behind than it is,
// and at most 2/maxMarks of the time the marks span more.
export class ReplayLag {
  /** `last`: when the newest watermark merged into the mark was seen (`at` when none was). */
  private marks: Array<{ rv: number; at: number; last: number }> = [];
  private primaryRv = 0;

  constructor(
    private readonly now: () => number = () => performance.now(),
    private readonly maxMarks = 512,
  ) {}

  /** The newest watermark the primary was seen at. */
  get primary(): number {
    return this.primaryRv;
  }

  /** The primary was seen at `rv` (a check, or a read of its watermark). */
  primaryAt(rv: number): void {
    if (rv <= this.primaryRv) return;
    this.primaryRv = rv;
    const at = this.now();
    this.marks.push({ rv, at, last: at });
    if (this.marks.length > this.maxMarks) this.merge();
  }

  /** Changes the primary has that a database at `rv` lacks. */
  behindRv(rv: number): number {
    return Math.max(0, this.primaryRv - rv);
  }

  /** Milliseconds the primary has had an rv that a database at `rv` lacks (0 when it lacks none). */
  behindMs(rv: number): number {
    const first = this.firstAbove(rv);
    return first === undefined ? 0 : Math.max(0, this.now() - this.marks[first].at);
  }

  /** No database reads are measured for is below `rv` any more: marks up to it are not needed. */
  forgetUpTo(rv: number): void {
    const first = this.firstAbove(rv);
    this.marks.splice(0, first ?? this.marks.length);
  }

  /** How many marks are kept (bounded by maxMarks). */
  get size(): number {
    return this.marks.length;
  }

  private firstAbove(rv: number): number | undefined {
    let lo = 0;
    let hi = this.marks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.marks[mid].rv > rv) hi = mid;
      else lo = mid + 1;
    }
    return lo < this.marks.length ? lo : undefined;
  }

  /**
   * Merges the two neighbours whose merged mark spans the least time: a database between them
   * is then reported behind since the older one was seen, at most that span more than it is.
   */
  private merge(): void {
    let best = 0;
    for (let i = 1; i < this.marks.length - 1; i++) if (this.marks[i + 1].last - this.marks[i].at < this.marks[best + 1].last - this.marks[best].at) best = i;
    const [older, newer] = [this.marks[best], this.marks[best + 1]];
    this.marks.splice(best, 2, { rv: newer.rv, at: older.at, last: newer.last });
  }
}
