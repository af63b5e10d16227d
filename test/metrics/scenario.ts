import { ThrottledWorker } from '../../src';
import { OrdersScenario, startOrdersScenario } from '../support/ordersScenario';

/**
 * The orders scenario (8 delivered, 121 held on per-customer: 120 of acme's 122, one of b1's 3), plus a queue
 * 'reports' whose one worker declares 'reports-only' (10 / 1s) and has no jobs.
 */
export type MetricsScenario = OrdersScenario & { reportsWorker: ThrottledWorker };

export async function startScenario(label: string): Promise<MetricsScenario> {
  return (await startOrdersScenario(label, { reports: true })) as MetricsScenario;
}

/** The value of one series in the text exposition format, or undefined when the series is absent. */
export function seriesValue(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Every series line (not HELP/TYPE) of the text. */
export function seriesLines(text: string): string[] {
  return text.split('\n').filter((l) => l.length > 0 && !l.startsWith('#'));
}
