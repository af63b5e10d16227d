import { LeaseRequest } from './grantorCalls';

/** A class's bucket ids, as its name spells them ("<gen>/<bucket id>|<bucket id>", or "<gen>/*"). */
export function bucketIdsOf(member: string): string[] {
  const rest = member.slice(member.indexOf('/') + 1);
  return rest === '*' ? [] : rest.split('|');
}

/**
 * How many tokens a worker leases, and for which classes. A token leased and not spent within h is
 * wasted for a whole W + h (the grantor counted it), so a worker leases for the slots asking now, first
 * classes first in queue order, plus a few ahead so that the next slots to ask need not wait on the grantor:
 * `ahead` grows by one after every lease round in which nothing expired and halves when tokens expire.
 * A class the grantor had no room for is not asked for again before the grantor said room returns.
 */
export class LeaseBook {
  private ahead: number;
  private readonly retryAt = new Map<string, number>();
  private expiredSinceLease = 0;

  constructor(private readonly concurrency: () => number) {
    this.ahead = Math.ceil(concurrency() / 4);
  }

  /**
   * What to ask the grantor for, given the classes waiting (in queue order; held -1: a flowing class whose
   * pool ran low, leased `ahead` for) and the slots asking now.
   */
  plan(wanted: readonly { member: string; held: number }[], asking: number, nowMs: number): LeaseRequest[] {
    let left = asking + this.ahead;
    const requests: LeaseRequest[] = [];
    for (const { member, held } of wanted) {
      if (left <= 0) break;
      const retryAt = this.retryAt.get(member);
      if (retryAt !== undefined && retryAt > nowMs) continue;
      const bucketIds = bucketIdsOf(member);
      if (bucketIds.length === 0) continue;
      const refill = held < 0;
      const count = Math.min(refill ? this.ahead : held, left);
      if (count <= 0) continue;
      requests.push({ member, bucketIds, count, refill });
      left -= count;
    }
    return requests;
  }

  /** The grantor's answer: classes it had no room for wait until it said; `ahead` adapts to what expired. */
  answered(requests: readonly LeaseRequest[], results: readonly { granted: number; roomInMs: number }[], nowMs: number): void {
    requests.forEach((request, i) => {
      const { granted, roomInMs } = results[i];
      if (granted < request.count && roomInMs > 0) this.retryAt.set(request.member, nowMs + roomInMs);
      else this.retryAt.delete(request.member);
    });
    if (this.expiredSinceLease > 0) this.ahead = Math.floor(this.ahead / 2);
    else this.ahead = Math.min(this.concurrency(), this.ahead + 1);
    this.expiredSinceLease = 0;
    // Classes long gone leave the map: it holds at most the classes asked for lately.
    if (this.retryAt.size > 10_000) for (const [member, at] of this.retryAt) if (at <= nowMs) this.retryAt.delete(member);
  }

  expired(count: number): void {
    this.expiredSinceLease += count;
  }
}
