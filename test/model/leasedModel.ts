import { tokenSlot, windowGeometry } from '../../src/grant/windowGeometry';

/**
 * A reference model of leased delivery's window tokens in plain TypeScript: the grantor's window counters
 * (lua/leaseTokens-1.lua, lua/returnLeasedTokens-1.lua over includes/windowCounter and includes/returnedSet) and a
 * queue's pools (lua/takeLeasedJobs-19.lua's deposits and includes/leasedRoom's spends, sweeps and, with
 * lua/withdrawLeases-1.lua, withdrawals). test/contract/leasedWindows.property.test.ts holds the scripts to it decision
 * by decision. Windows only: no rate, concurrency, pause, override or recovery hold (their own tests cover those).
 *
 * Counters are kept as the Lua keeps them: a token granted at g with lease h goes in slot k = ceil((g + W + h) / slot)
 * (the package's own geometry, src/grant/windowGeometry.ts), and a slot releases all its tokens at the latest
 * release among them; a slot is live while that release is after now.
 */
export interface ModelLimit {
  readonly max: number;
  readonly windowMs: number;
}

/** One bucket of a class as the class names it: its id ("<encoded throttle>=<segment>"), and its cost there. */
export interface ModelBucket {
  readonly id: string;
  readonly cost: number;
}

export interface LeaseRequestModel {
  readonly buckets: readonly ModelBucket[];
  readonly count: number;
  readonly refill: boolean;
}

export interface LeaseDecision {
  granted: number;
  roomInMs: number;
  lacking: string;
}

export interface ModelReturnGroup {
  readonly bucketId: string;
  readonly grantUs: number;
  readonly leaseMs: number;
  readonly nonce: string;
  readonly count: number;
}

export interface DepositModel {
  readonly buckets: readonly ModelBucket[];
  readonly requestUs: number;
  readonly grantUs: number;
  readonly nonce: string;
  readonly count: number;
  readonly refill: boolean;
}

interface Slot { count: number; releaseUs: number }

interface PoolEntry { expiresUs: number; grantUs: number; leaseMs: number; nonce: string; units: number }

const memberOf = (e: PoolEntry): string => `${e.grantUs}:${e.leaseMs}:${e.nonce}#${e.units}`;
/** A pool's order (a ZSET): expiry, then the member's bytes. */
const poolOrder = (a: PoolEntry, b: PoolEntry): number => a.expiresUs - b.expiresUs || (memberOf(a) < memberOf(b) ? -1 : memberOf(a) > memberOf(b) ? 1 : 0);

/** The encoded throttle name of a bucket id. */
export const throttleOfBucket = (bucketId: string): string => bucketId.slice(0, bucketId.indexOf('='));

export class LeasedModel {
  private readonly counters = new Map<string, Map<number, Slot>>();
  private readonly returned = new Map<string, Set<string>>();
  private readonly pools = new Map<string, PoolEntry[]>();

  /** limitsOf: the published window limits of a throttle, by its encoded name. */
  constructor(private readonly limitsOf: (encodedName: string) => readonly ModelLimit[]) {}

  // --- The grantor's counters --------------------------------------------------------------------------------

  private live(bucketId: string, limit: ModelLimit, nowUs: number): Map<number, Slot> {
    const key = `${bucketId}@${limit.windowMs}`;
    let counter = this.counters.get(key);
    if (!counter) {
      counter = new Map();
      this.counters.set(key, counter);
    }
    for (const [k, slot] of counter) if (slot.releaseUs <= nowUs || slot.count <= 0) counter.delete(k);
    return counter;
  }

  /** Tokens the counter of one limit of a bucket holds at nowUs. */
  counted(bucketId: string, limit: ModelLimit, nowUs: number): number {
    let n = 0;
    for (const slot of this.live(bucketId, limit, nowUs).values()) n += slot.count;
    return n;
  }

  private add(bucketId: string, limit: ModelLimit, count: number, grantUs: number, leaseMs: number): void {
    if (count <= 0) return;
    const counter = this.live(bucketId, limit, grantUs);
    const { k, releaseUs } = tokenSlot(limit.windowMs, grantUs, leaseMs);
    const slot = counter.get(k);
    counter.set(k, { count: (slot?.count ?? 0) + count, releaseUs: Math.max(slot?.releaseUs ?? 0, releaseUs) });
  }

  /** When the counter holds at most max - cost tokens (0: it does now), walking its slots in order. */
  private roomAtUs(bucketId: string, limit: ModelLimit, cost: number, nowUs: number): number {
    const excess = this.counted(bucketId, limit, nowUs) - limit.max + cost;
    if (excess <= 0) return 0;
    if (cost > limit.max) return nowUs + 1_000_000;
    let released = 0;
    for (const [, slot] of [...this.live(bucketId, limit, nowUs)].sort(([a], [b]) => a - b)) {
      released += slot.count;
      if (released >= excess) return slot.releaseUs;
    }
    throw new Error('unreachable: a full counter always frees up');
  }

  /**
   * lua/leaseTokens-1.lua for window limits: each request decided in order, seeing the grants before it. n deliveries
   * are granted when every limit of every bucket (cost > 0) has room for n times its cost there (a refill: half the
   * room), and counted in all of them at once against W + h; when fewer than asked, when one more would fit (ms from
   * now, at least 1) and the bucket whose room comes last.
   */
  lease(nowUs: number, leaseMs: number, requests: readonly LeaseRequestModel[]): LeaseDecision[] {
    return requests.map(({ buckets, count, refill }) => {
      const sources = buckets.filter((b) => b.cost > 0);
      let granted = count;
      for (const b of sources) {
        let room = Math.min(...this.limitsOf(throttleOfBucket(b.id)).map((l) => l.max - this.counted(b.id, l, nowUs)));
        if (refill) room = Math.floor(room / 2);
        granted = Math.min(granted, Math.floor(room / b.cost));
      }
      granted = Math.max(0, granted);
      for (const b of sources) for (const l of this.limitsOf(throttleOfBucket(b.id))) this.add(b.id, l, granted * b.cost, nowUs, leaseMs);
      let roomInMs = 0;
      let lacking = '';
      if (granted < count) {
        let roomAt = nowUs;
        for (const b of sources) {
          const when = Math.max(0, ...this.limitsOf(throttleOfBucket(b.id)).map((l) => this.roomAtUs(b.id, l, b.cost, nowUs)));
          if (when > roomAt) {
            roomAt = when;
            lacking = b.id;
          }
        }
        roomInMs = Math.max(1, Math.ceil((roomAt - nowUs) / 1000));
      }
      return { granted, roomInMs, lacking };
    });
  }

  /**
   * lua/returnLeasedTokens-1.lua: each group stops counting up to `count` tokens in the slot of its grant, in every
   * limit of its bucket (still live), once per nonce per throttle and only while its grant still matters. Returns
   * the total stopped (the script's reply: per group the most any limit stopped) and, per group, what each limit
   * stopped (window ms -> tokens).
   */
  returnGroups(nowUs: number, groups: readonly ModelReturnGroup[]): { returned: number; stopped: Map<number, number>[] } {
    const nowMs = Math.floor(nowUs / 1000);
    let returned = 0;
    const stopped = groups.map((group) => {
      const byWindow = new Map<number, number>();
      const name = throttleOfBucket(group.bucketId);
      const limits = this.limitsOf(name);
      const set = this.returned.get(name) ?? new Set<string>();
      this.returned.set(name, set);
      const mattersMs = Math.max(...limits.map((l) => Math.ceil((tokenSlot(l.windowMs, group.grantUs, group.leaseMs).k * windowGeometry(l.windowMs).slotUs) / 1000)));
      if (mattersMs <= nowMs || set.has(group.nonce)) return byWindow;
      set.add(group.nonce);
      let most = 0;
      for (const limit of limits) {
        const { k } = tokenSlot(limit.windowMs, group.grantUs, group.leaseMs);
        const slot = this.live(group.bucketId, limit, nowUs).get(k);
        if (!slot) continue;
        const removed = Math.min(group.count, slot.count);
        slot.count -= removed;
        byWindow.set(limit.windowMs, removed);
        most = Math.max(most, removed);
      }
      returned += most;
      return byWindow;
    });
    return { returned, stopped };
  }

  // --- A queue's pools ---------------------------------------------------------------------------------------

  private pool(bucketId: string): PoolEntry[] {
    let pool = this.pools.get(bucketId);
    if (!pool) {
      pool = [];
      this.pools.set(bucketId, pool);
    }
    return pool;
  }

  /**
   * A deposit (lua/takeLeasedJobs-19.lua, before its delivery body), with `leaseMs` the call's h and `held` the jobs
   * held in the class's own list: kept whole for a refill, else one delivery per held job, and only while the
   * request's h has not run out (expiresUs = requestUs + h, after now); the rest answered for return (nonce "/x").
   * Returns what was kept, the returns, and the tokens counted as expired (a deposit that came too late).
   */
  deposit(nowUs: number, leaseMs: number, deposit: DepositModel, held: number): { keep: number; returns: ModelReturnGroup[]; expired: number } {
    const expiresUs = deposit.requestUs + leaseMs * 1000;
    const inTime = expiresUs > nowUs;
    const keep = deposit.count > 0 && inTime ? (deposit.refill ? deposit.count : Math.min(deposit.count, held)) : 0;
    const expired = deposit.count > 0 && !inTime ? deposit.buckets.reduce((sum, b) => sum + deposit.count * b.cost, 0) : 0;
    const returns: ModelReturnGroup[] = [];
    for (const b of deposit.buckets) {
      if (keep > 0 && b.cost > 0) {
        this.pool(b.id).push({ expiresUs, grantUs: deposit.grantUs, leaseMs, nonce: deposit.nonce, units: keep * b.cost });
      }
      if (deposit.count > keep && b.cost > 0) {
        returns.push({ bucketId: b.id, grantUs: deposit.grantUs, leaseMs, nonce: `${deposit.nonce}/x`, count: (deposit.count - keep) * b.cost });
      }
    }
    return { keep, returns, expired };
  }

  /** Unexpired tokens a pool holds at nowUs. */
  tokens(bucketId: string, nowUs: number): number {
    return this.pool(bucketId).filter((e) => e.expiresUs > nowUs).reduce((sum, e) => sum + e.units, 0);
  }

  /**
   * A delivery that spends its cost in every bucket (cost > 0), earliest expiry first (includes/leasedRoom): null
   * when some pool lacks the tokens. Otherwise what it took, per bucket, as the ticket names it
   * ("<grantUs>:<leaseMs>:<nonce>#<taken>"), and the expiry of the first entry it took from in each (the earliest).
   */
  spend(nowUs: number, buckets: readonly ModelBucket[]): { expiryUs: number; grants: Map<string, { cost: number; grants: string[] }> } | null {
    const spending = buckets.filter((b) => b.cost > 0);
    if (spending.some((b) => this.tokens(b.id, nowUs) < b.cost)) return null;
    let expiryUs = Infinity;
    const grants = new Map<string, { cost: number; grants: string[] }>();
    for (const b of spending) {
      const pool = this.pool(b.id);
      const usable = pool.filter((e) => e.expiresUs > nowUs).sort(poolOrder);
      expiryUs = Math.min(expiryUs, usable[0].expiresUs);
      const took: string[] = [];
      let left = b.cost;
      for (const entry of usable) {
        if (left === 0) break;
        const taken = Math.min(entry.units, left);
        took.push(`${entry.grantUs}:${entry.leaseMs}:${entry.nonce}#${taken}`);
        entry.units -= taken;
        left -= taken;
      }
      this.pools.set(b.id, pool.filter((e) => e.units > 0));
      grants.set(b.id, { cost: b.cost, grants: took });
    }
    return { expiryUs, grants };
  }

  /**
   * A pool's sweep (includes/leasedRoom roomSource) answered this group for return ("<nonce>/e"): true when the pool
   * held such an entry, expired by nowUs with `count` tokens left; it leaves the pool.
   */
  swept(nowUs: number, group: ModelReturnGroup): boolean {
    const pool = this.pool(group.bucketId);
    const at = pool.findIndex((e) => `${e.nonce}/e` === group.nonce && e.grantUs === group.grantUs && e.leaseMs === group.leaseMs);
    if (at < 0 || pool[at].expiresUs > nowUs || pool[at].units !== group.count) return false;
    pool.splice(at, 1);
    return true;
  }

  /**
   * lua/withdrawLeases-1.lua: every entry still unexpired at the call's ms (expiry after floor(now / 1000) ms) goes,
   * answered for return under "<nonce>/w"; the pools are emptied.
   */
  withdraw(nowUs: number): ModelReturnGroup[] {
    const fromUs = Math.floor(nowUs / 1000) * 1000;
    const groups: ModelReturnGroup[] = [];
    for (const [bucketId, pool] of this.pools) {
      for (const e of [...pool].sort(poolOrder)) {
        if (e.expiresUs > fromUs) groups.push({ bucketId, grantUs: e.grantUs, leaseMs: e.leaseMs, nonce: `${e.nonce}/w`, count: e.units });
      }
    }
    this.pools.clear();
    return groups;
  }
}
