import { mostInAnyWindow } from '../check/mostInAnyWindow';
import { textTable } from '../terminal/textTable';
import { wrapWords } from '../terminal/wrapItems';
import { Delivery, PER_CUSTOMER_LIMIT, SMALL_CUSTOMERS, STRIPE_LIMIT } from './demoWorkload';

export interface GuaranteeCheck {
  what: string;
  most: number;
  limit: number;
}

/** Per throttled bucket, the most deliveries in any 1 s, from processedOn (the Redis clock at each delivery). */
export function guaranteeChecks(delivered: readonly Delivery[]): GuaranteeCheck[] {
  const times = (match: (d: Delivery) => boolean) => delivered.filter(match).map((d) => d.processedOn);
  return [
    { what: 'stripe: most charges in any 1 s', most: mostInAnyWindow(times((d) => d.charge), 1000), limit: STRIPE_LIMIT },
    ...['acme', ...SMALL_CUSTOMERS].map((customer) => ({
      what: `stripe-per-customer ${customer}: most in any 1 s`,
      most: mostInAnyWindow(times((d) => d.bucket === customer), 1000),
      limit: PER_CUSTOMER_LIMIT,
    })),
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
    ...wrapWords('The guarantee, checked from job.processedOn (the Redis clock at each delivery):', width),
    ...textTable(checks.map((c) => [c.most <= c.limit ? 'ok' : 'FAIL', c.what, `${c.most} ≤ ${c.limit}`]), { indent: '  ', align: ['left', 'left', 'right'] }),
    '',
    ...wrapWords(`Flowing past the big backlog: emails all delivered by ${finishedAt((d) => d.bucket === 'emails')} s, `
      + `small customers by ${finishedAt((d) => SMALL_CUSTOMERS.includes(d.bucket))} s, `
      + `acme's charges by ${finishedAt((d) => d.bucket === 'acme')} s.`, width),
    '',
    ...(allDelivered ? [] : wrapWords('Not every job was delivered in time.', width)),
    ...wrapWords(ok ? 'All deliveries stayed within every limit.' : 'Something went wrong: see above.', width),
  ];
}
