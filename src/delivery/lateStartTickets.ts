import { decodeSegment } from '../keys/keyEncoding';
import { ReturnedGrant } from '../lua/calls/returnTokens';
import type { ReturnGroup } from '../lua/calls/takeLeasedJobs';
import type { LateStartRate, LateStartWindow } from '../lua/calls/countLateStart';
import type { LateLeasedGrant } from '../lua/calls/countLateLeased';

/** A delivery whose processor did not start in time: what its tokens were counted with, to give them back. */
export interface LateDelivery {
  readonly jobId: string;
  /** The lease it was counted with (h of its delivery call). */
  readonly hMs: number;
  /** By when it had to start after its delivery (ms): h, or a rate's shorter lease. */
  readonly deadlineMs: number;
  /** The delivery script's Redis time (us): the tokens were counted then. */
  readonly grantUs: number;
  /** What the job was counted in (TakeReply.tickets), '' for nothing. */
  readonly ticket: string;
  /** When its delivery call's reply came (this process's monotonic clock): the worker's memory noted it then. */
  readonly repliedAt: number;
}

/** One bucket a ticket names: what the job spent there. */
interface TicketBucket {
  readonly bucketId: string;
  readonly name: string;
  readonly bucket: string;
  readonly cost: number;
  /** Exact delivery: the windows (ms) that counted the job (none for a rate or a concurrency alone). */
  readonly windows: number[];
  /**
   * Exact delivery: the lease those windows counted the job with when it was not the call's h ("~<ms>": a bucket
   * far from full, lua/includes/exactRoom.lua); undefined: h.
   */
  readonly leaseMs?: number;
  /** Leased delivery: the grants its tokens came from, "<grantUs>:<leaseMs>:<nonce>#<units>". */
  readonly grants: string[];
  /** Exact delivery: the bucket's rate TAT (us) the job's grant read and wrote ("*<before>:<after>"), to undo it. */
  readonly rate?: { beforeUs: number; afterUs: number };
}

/**
 * An exact ticket's deadline: "<D ms>#" before the buckets when the job must start within D rather than the call's
 * h: the least lease that counted it, a rate's shorter one or the longer one of buckets far from full
 * (lua/includes/exactRoom.lua's roomTicketing; '#' never occurs in a bucket id), and the buckets after it.
 */
export function deadlineOf(ticket: string): { deadlineMs?: number; buckets: string } {
  const sharp = ticket.indexOf('#');
  return sharp < 0 ? { buckets: ticket } : { deadlineMs: Number(ticket.slice(0, sharp)), buckets: ticket.slice(sharp + 1) };
}

/**
 * A ticket (TakeReply.tickets, without a leased ticket's "<expiry>!" or an exact one's "<D>#"): per bucket
 * "<bucket id>$<cost>@<windows>[~<lease>][*<rate TAT before>:<after>]" (exact, windows joined by ',') or
 * "<bucket id>$<cost>@^<grants>" (leased, grants joined by ','), joined by '|'. Bucket ids are encoded
 * (src/keys/keyEncoding.ts): '|', '$', '@', '^' and ',' never occur in them ('~' and '*' may: what follows the
 * last '@' is read for them).
 */
export function bucketsOfTicket(ticket: string): TicketBucket[] {
  return ticket.split('|').filter(Boolean).map((part) => {
    const at = part.lastIndexOf('@');
    const dollar = part.lastIndexOf('$', at);
    const bucketId = part.slice(0, dollar);
    const eq = bucketId.indexOf('=');
    const [counted, grants = ''] = part.slice(at + 1).split('^');
    const [leased, rate] = counted.split('*');
    const [windows, lease] = leased.split('~');
    const [beforeUs, afterUs] = rate ? rate.split(':').map(Number) : [];
    return {
      bucketId,
      name: decodeSegment(bucketId.slice(0, eq)),
      bucket: bucketId.slice(eq + 1),
      cost: Number(part.slice(dollar + 1, at)),
      windows: windows.split(',').filter(Boolean).map(Number),
      grants: grants.split(',').filter(Boolean),
      ...(lease ? { leaseMs: Number(lease) } : {}),
      ...(rate ? { rate: { beforeUs, afterUs } } : {}),
    };
  });
}

/**
 * Exact delivery: the windows that counted a late job, to stop counting it, and its rates' grants, undone while
 * each is its rate's latest (lua/returnTokens-n.lua).
 */
export function lateExactReturns(late: LateDelivery): ReturnedGrant[] {
  return bucketsOfTicket(late.ticket).filter((b) => b.windows.length > 0 || b.rate).map((b) => ({
    name: b.name,
    bucket: b.bucket,
    nonce: `late.${late.jobId}.${late.grantUs}`,
    grantUs: late.grantUs,
    leaseMs: b.leaseMs ?? late.hMs,
    count: b.cost,
    windows: b.windows,
    ...(b.rate ? { rate: b.rate } : {}),
  }));
}

/**
 * Exact delivery: what counts a started job for longer (lua/countLateStart-n.lua), its start having taken `toLeaseMs`
 * after its delivery call: the windows that counted it with a shorter lease (its bucket's "~<L>", else the call's h),
 * and its buckets' rates, whose TATs go later by the start's excess over the job's deadline.
 */
export function lateStartCounts(late: LateDelivery, toLeaseMs: number): { windows: LateStartWindow[]; rates: LateStartRate[] } {
  const windows: LateStartWindow[] = [];
  const rates: LateStartRate[] = [];
  for (const b of bucketsOfTicket(late.ticket)) {
    const fromLeaseMs = b.leaseMs ?? late.hMs;
    if (fromLeaseMs < toLeaseMs) for (const windowMs of b.windows) windows.push({ name: b.name, bucket: b.bucket, windowMs, fromLeaseMs, count: b.cost });
    if (b.rate && toLeaseMs > late.deadlineMs) rates.push({ name: b.name, bucket: b.bucket, afterUs: b.rate.afterUs, byUs: (toLeaseMs - late.deadlineMs) * 1000 });
  }
  return { windows, rates };
}

/**
 * Leased delivery: the grantor's grants a late job's tokens came from, to give back (lua/returnLeasedTokens-1.lua).
 * Each return names the job and its delivery, so that it is taken once, and never for another job's tokens.
 */
export function lateLeasedReturns(late: LateDelivery): ReturnGroup[] {
  return grantsOfTicket(late.ticket).map(({ nonce, ...grant }) => ({ ...grant, nonce: `${nonce}/l.${late.jobId}.${late.grantUs}` }));
}

/** Leased delivery: the grants a started job's tokens came from, to count longer (lua/countLateLeased-1.lua). */
export function lateLeasedGrants(late: LateDelivery): LateLeasedGrant[] {
  return grantsOfTicket(late.ticket).map(({ nonce: _nonce, ...grant }) => grant);
}

/** A leased ticket's grants: each one's bucket, grant time, lease, nonce and the units it gave the job. */
function grantsOfTicket(ticket: string): (LateLeasedGrant & { nonce: string })[] {
  return bucketsOfTicket(ticket).flatMap((b) => b.grants.map((grant) => {
    const [grantUs, leaseMs, rest] = splitGrant(grant);
    const hash = rest.lastIndexOf('#');
    return { bucketId: b.bucketId, grantUs: Number(grantUs), leaseMs: Number(leaseMs), nonce: rest.slice(0, hash), count: Number(rest.slice(hash + 1)) };
  }));
}

/** "<grantUs>:<leaseMs>:<nonce>#<units>" -> its grant time, lease and the rest. */
function splitGrant(grant: string): [string, string, string] {
  const first = grant.indexOf(':');
  const second = grant.indexOf(':', first + 1);
  return [grant.slice(0, first), grant.slice(first + 1, second), grant.slice(second + 1)];
}
