import { mostInAnyWindow } from '../check/mostInAnyWindow';
import { textTable } from '../terminal/textTable';
import { wrapWords } from '../terminal/wrapItems';
import { Delivery, PER_CUSTOMER_LIMIT, SMALL_CUSTOMERS, STRIPE_LIMIT } from './demoWorkload';

export interface GuaranteeCheck {
  what: string;
  /** The most in any 1 s from processedOn, and from processor starts. */
  atProcessedOn: number;
  atStart: number;
  /** The larger of the two: what must stay within the limit. */
  most: number;
  limit: number;
}

/**
 * Per throttled bucket, the most deliveries in any 1 s, from processedOn (the Redis clock at each delivery) and
 * from the moment each processor started (where the API it calls sees it).
 */
export function guaranteeChecks(delivered: readonly Delivery[]): GuaranteeCheck[] {
  const check = (what: string, match: (d: Delivery) => boolean, limit: number): GuaranteeCheck => {
    const mine = delivered.filter(match);
    const atProcessedOn = mostInAnyWindow(mine.map((d) => d.processedOn), 1000);
    const atStart = mostInAnyWindow(mine.map((d) => d.startedAt), 1000);
    return { what, atProcessedOn, atStart, most: Math.max(atProcessedOn, atStart), limit };
  };
  return [
    check('stripe: most charges in any 1 s', (d) => d.charge, STRIPE_LIMIT),
    ...['acme', ...SMALL_CUSTOMERS].map((customer) => check(`stripe-per-customer ${customer}: most in any 1 s`, (d) => d.bucket === customer, PER_CUSTOMER_LIMIT)),
  ];
}

/**
 * What the demo prints once it is over, each paragraph word-wrapped to `width` columns so that a narrow
 * terminal breaks it between words rather than inside one.
 */
export function summaryLines(delivered: readonly Delivery[], checks: readonly GuaranteeCheck[], allDelivered: boolean, width: number): string[] {
  const start = Math.min(...delivered.map((d) => d.processedOn));
  const finishedAt = (match: (d: Delivery) => boolean) => ((Math.max(...delivered.filter(match).map((d) => d.processedOn)) - start) / 1000).toFixed(2);
  const ok = allDelivered && checks.every((c) => c.most <= c.limit);
  return [
    '',
    ...wrapWords('The guarantee, checked from job.processedOn (the Redis clock at each delivery) / from the moment each processor started (where the API sees it):', width),
    ...textTable(checks.map((c) => [c.most <= c.limit ? 'ok' : 'FAIL', c.what, `${c.atProcessedOn} / ${c.atStart} ≤ ${c.limit}`]), { indent: '  ', align: ['left', 'left', 'right'] }),
    '',
    ...wrapWords(`Flowing past the big backlog: emails all delivered by ${finishedAt((d) => d.bucket === 'emails')} s, `
      + `small customers by ${finishedAt((d) => SMALL_CUSTOMERS.includes(d.bucket))} s, `
      + `acme's charges by ${finishedAt((d) => d.bucket === 'acme')} s.`, width),
    '',
    ...(allDelivered ? [] : wrapWords('Not every job was delivered in time.', width)),
    ...wrapWords(ok ? 'All deliveries stayed within every limit.' : 'Something went wrong: see above.', width),
  ];
}
