import { OrdersScenario, startOrdersScenario } from '../support/ordersScenario';

/**
 * The orders scenario with, as its tail, 3 jobs whose customer is the number 7: 9 delivered
 * (2 + 2 + 2 + 1 + 2), 122 held on full buckets (acme 120, b1 1, 7 1); 5 active buckets, 4 at their limit.
 */
export type CliScenario = OrdersScenario;

export const DELIVERED = 9;
export const HELD = 122;

export function startScenario(label: string): Promise<CliScenario> {
  return startOrdersScenario(label, {
    tail: Array.from({ length: 3 }, () => ({ name: 'charge', data: { customer: 7 } })),
    delivered: DELIVERED,
    held: HELD,
  });
}
