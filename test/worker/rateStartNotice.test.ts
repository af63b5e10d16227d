import type { Logger } from 'pino';
import { Throttle } from '../../src';
import { rateStartNotice } from '../../src/worker/notices/rateStartNotice';

// What keeping a rate at processor start costs is said once, with the fix, when it costs more than 5 %.
describe('rateStartNotice', () => {
  const said = (throttles: Throttle[], startDeadlineMs: number): string[] => {
    const lines: string[] = [];
    const logger = { warn: (_fields: object, message: string) => { lines.push(message); } } as unknown as Logger;
    rateStartNotice(logger, 'q', throttles, startDeadlineMs);
    return lines;
  };

  it('names the rate kept, what it runs at and the burst that keeps all of it', () => {
    expect(said([Throttle.named('api').rate(100, '1s')], 50)).toEqual([
      "throttle 'api': rate(100, '1s', { burst: 1 }) is kept at processor start by granting one token every 20 ms (a processor "
      + 'starts up to 10 ms after its grant): 50 per 1s, 50 % of the rate. Give it burst: 2 to keep 100 per 1s (at most 2 at '
      + 'once), or leaseMs: 0 to keep it at processedOn only.',
    ]);
  });

  it('says nothing where the burst covers the deadline, for a slow rate, or with leaseMs 0', () => {
    expect(said([Throttle.named('a').rate(100, '1s', { burst: 2 }), Throttle.named('b').rate(2, '1s'), Throttle.named('c').limit(5, '1s')], 50)).toEqual([]);
    expect(said([Throttle.named('api').rate(100, '1s')], 0)).toEqual([]);
  });
});
