/** Units of one bucket's concurrency, as a delivery call or the grantor names them. */
export type BucketUnits = readonly [bucketId: string, units: number];
/** A bucket's hold as a renewal tells it: units held, and how many of them the worker's jobs in flight use. */
export type HoldRenewal = readonly [bucketId: string, units: number, inUse: number];

/**
 * What a worker in leased delivery holds of its throttles' concurrency (`concurrency(n)`): the units the
 * grantor counts for it per bucket (its hold, lua/includes/inFlightCounter.lua), and how many of them its jobs
 * in flight use. The worker is the only one who knows both: its delivery calls spend its free units (lent to
 * the call, so that two calls never spend the same ones), a job's end frees them at once with no Redis call,
 * and its renewals tell the grantor what it holds (lua/renewHolds-1.lua). A job counts from its delivery until
 * its processor has ended, even if bullmq took it back meanwhile (its lock lapsed): it may still be running.
 */
export class ConcurrencyHolds {
  private readonly held = new Map<string, number>();
  /** Units of jobs in flight, and units lent to delivery calls in flight. */
  private readonly inUse = new Map<string, number>();
  private readonly jobs = new Map<string, BucketUnits[]>();
  private readonly lastUsedMs = new Map<string, number>();
  /** Buckets whose units were freed since the last call: their waiting classes look again. */
  private freed = new Set<string>();
  /** Buckets whose hold changed since the last renewal (lowered or dropped ones must be told). */
  private readonly changed = new Set<string>();

  private free(bucketId: string): number {
    return (this.held.get(bucketId) ?? 0) - (this.inUse.get(bucketId) ?? 0);
  }

  private add(map: Map<string, number>, bucketId: string, units: number): void {
    const next = (map.get(bucketId) ?? 0) + units;
    if (next === 0) map.delete(bucketId);
    else map.set(bucketId, next);
  }

  /** Every free unit, lent to one delivery call until settle(): the call may spend them. */
  lend(): { free: BucketUnits[]; freed: string[] } {
    const free: BucketUnits[] = [];
    for (const bucketId of this.held.keys()) {
      const units = this.free(bucketId);
      if (units <= 0) continue;
      free.push([bucketId, units]);
      this.add(this.inUse, bucketId, units);
    }
    const freed = [...this.freed];
    this.freed = new Set();
    return { free, freed };
  }

  /** A call's reply: the units it spent stay in use with their jobs; the rest are free again. */
  settle(lent: readonly BucketUnits[], spends: ReadonlyMap<string, BucketUnits[]>, nowMs: number): void {
    for (const [bucketId, units] of lent) this.add(this.inUse, bucketId, -units);
    for (const [jobId, units] of spends) {
      for (const [bucketId, cost] of units) {
        this.add(this.inUse, bucketId, cost);
        this.lastUsedMs.set(bucketId, nowMs);
      }
      this.jobs.set(jobId, [...(this.jobs.get(jobId) ?? []), ...units]);
    }
  }

  /** A call failed: what it was lent is free again (it may have spent some: they stay counted in the hold). */
  unlend(lent: readonly BucketUnits[]): void {
    for (const [bucketId, units] of lent) this.add(this.inUse, bucketId, -units);
  }

  /** A job this worker ran has ended: its units are free for the worker's next jobs. Returns their buckets. */
  jobEnded(jobId: string, nowMs: number): string[] {
    const units = this.jobs.get(jobId);
    if (!units) return [];
    this.jobs.delete(jobId);
    for (const [bucketId, cost] of units) {
      this.add(this.inUse, bucketId, -cost);
      this.lastUsedMs.set(bucketId, nowMs);
      this.freed.add(bucketId);
    }
    return units.map(([bucketId]) => bucketId);
  }

  /** The grantor added units to the hold (a grant's reply). */
  granted(bucketId: string, units: number, nowMs: number): void {
    this.add(this.held, bucketId, units);
    this.lastUsedMs.set(bucketId, nowMs);
  }

  /** Free units by bucket, for a lease request: a grant uses them before it adds to the hold. */
  credit(): BucketUnits[] {
    return [...this.held.keys()].map((bucketId) => [bucketId, this.free(bucketId)] as const).filter(([, units]) => units > 0);
  }

  /** Free units unused for `idleMs` are given back: the hold is lowered to what is in use (told at the next renewal). */
  releaseIdle(nowMs: number, idleMs: number): void {
    for (const bucketId of [...this.held.keys()]) {
      const free = this.free(bucketId);
      if (free > 0 && nowMs - (this.lastUsedMs.get(bucketId) ?? 0) >= idleMs) {
        this.add(this.held, bucketId, -free);
        this.changed.add(bucketId);
      }
    }
  }

  /** What to tell the grantor in a renewal: every bucket held (units held, of those in use), and those dropped since, with 0. */
  renewal(): HoldRenewal[] {
    const named = new Set([...this.held.keys(), ...this.changed]);
    this.changed.clear();
    return [...named].map((bucketId) => [bucketId, this.held.get(bucketId) ?? 0, Math.min(this.held.get(bucketId) ?? 0, this.inUse.get(bucketId) ?? 0)] as const);
  }

  /** A renewal that failed: what it would have told is told by the next. */
  unsent(holds: readonly HoldRenewal[]): void {
    for (const [bucketId] of holds) this.changed.add(bucketId);
  }

  /** The grantor had let these holds lapse: only the units of jobs in flight are held again, the free ones are gone. */
  lapsed(bucketIds: readonly string[]): void {
    for (const bucketId of bucketIds) {
      const held = this.held.get(bucketId) ?? 0;
      const inUse = Math.min(held, this.inUse.get(bucketId) ?? 0);
      this.add(this.held, bucketId, inUse - held);
    }
  }

  /** The buckets the worker holds units of. */
  buckets(): string[] {
    return [...this.held.keys()];
  }

  /** Units held in all. */
  get heldTotal(): number {
    let total = 0;
    for (const units of this.held.values()) total += units;
    return total;
  }

  /** Some hold was lowered or dropped since the last renewal: the grantor should know at once. */
  get changedSinceRenewal(): boolean {
    return this.changed.size > 0;
  }

  /** Closing, with every job ended: every hold goes. */
  dropAll(): HoldRenewal[] {
    const named = [...new Set([...this.held.keys(), ...this.changed])].map((bucketId) => [bucketId, 0, 0] as const);
    this.held.clear();
    this.changed.clear();
    return named;
  }
}
