import { OrdersScenario, startOrdersScenario } from '../support/ordersScenario';

/**
 * The orders scenario with, as its tail, 3 jobs whose customer is the number 7: 9 delivered
 * (2 + 2 + 2 + 1 + 2), 122 held on full buckets (acme 120, b1 1, 7 1); 5 active buckets, 4 at their limit.
 */
export type CliScenario = OrdersScenario;

export const DELIVERED = 9;
export const HELD = 122;

/** `perCustomerWindow`: '1h' for a file of CLI processes, which can outlast a minute on a loaded machine. */
export function startScenario(label: string, perCustomerWindow: '1m' | '1h' = '1m'): Promise<CliScenario> {
  return startOrdersScenario(label, {
    perCustomerWindow,
    tail: Array.from({ length: 3 }, () => ({ name: 'charge', data: { customer: 7 } })),
    delivered: DELIVERED,
    held: HELD,
  });
}
