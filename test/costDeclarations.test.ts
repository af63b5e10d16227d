import { Cost, costCapacity } from '../src/declarations/Cost';
import { Throttle } from '../src/declarations/Throttle';
import { mergeDeclarations } from '../src/declarations/mergeDeclarations';
import { InvalidThrottleError } from '../src/errors/InvalidThrottleError';
import { ThrottleConflictError } from '../src/errors/ThrottleConflictError';
import { configGeneration, effectiveThrottle } from '../src/queueState/queueConfig';
import type { RegistryEntry } from '../src/queueState/registryEntry';
import { declarationData } from '../src/worker/declarations/declarationRegistry';
import { jobCost } from '../src/queueState/jobCost';

describe('cost(source, { default })', () => {
  it('declares where a job\'s cost is read, travels through the registry, and merges only with the same cost', () => {
    const tokens = Throttle.named('openai-tokens').cost(Cost.data('usage.tokens'), { default: 1000 }).limit(90_000, '1m');
    expect(tokens.costSpec).toEqual({ source: { kind: 'data', path: 'usage.tokens' }, default: 1000 });
    expect(JSON.parse(JSON.stringify(declarationData(tokens))).costSpec).toEqual(tokens.costSpec);
    expect(mergeDeclarations([tokens, Throttle.named('openai-tokens').cost(Cost.data('usage.tokens'), { default: 1000 }).limit(1000, '1s')]).costSpec).toEqual(tokens.costSpec);
    expect(() => mergeDeclarations([tokens, Throttle.named('openai-tokens').limit(90_000, '1m')])).toThrow(ThrottleConflictError);
    expect(() => mergeDeclarations([tokens, Throttle.named('openai-tokens').cost(Cost.attribute('tokens')).limit(90_000, '1m')])).toThrow(
      "Throttle 'openai-tokens' is declared with cost Cost.data(\"usage.tokens\") with default 1000 and with cost Cost.attribute(\"tokens\"): one throttle counts one cost. Give one of them another name, or declare the same cost everywhere.",
    );
  });

  it('rejects a bad source, a bad default and a second cost()', () => {
    expect(() => Cost.data('')).toThrow(InvalidThrottleError);
    expect(() => Cost.data('a..b')).toThrow(/non-empty dotted path/);
    expect(() => Cost.attribute('')).toThrow(/non-empty string/);
    expect(() => Throttle.named('t').cost(Cost.data('n'), { default: 0 })).toThrow("Throttle 't': cost(…, { default: 0 }): the default must be a positive whole number, such as { default: 1000 }, or left out (a job without a cost then fails).");
    expect(() => Throttle.named('t').cost(Cost.data('n'), { default: 1.5 })).toThrow(InvalidThrottleError);
    expect(() => Throttle.named('t').cost(Cost.data('n')).cost(Cost.data('m'))).toThrow(/cost\(\) is declared twice/);
    expect(() => Throttle.named('t').cost({ kind: 'name' } as never)).toThrow(/takes Cost.data\(path\) or Cost.attribute\(name\)/);
  });

  it('a different cost classifies jobs again (the config generation changes)', () => {
    const plain = mergeDeclarations([Throttle.named('t').limit(10, '1s')]);
    const costed = mergeDeclarations([Throttle.named('t').cost(Cost.data('n')).limit(10, '1s')]);
    expect(configGeneration([plain])).not.toBe(configGeneration([costed]));
    expect(configGeneration([costed])).toBe(configGeneration([mergeDeclarations([Throttle.named('t').cost(Cost.data('n')).limit(20, '1s')])]));
  });

  it('reads a job\'s cost: a positive whole number, else the default, else a reason; never more than its limits let go at once', () => {
    const throttle = mergeDeclarations([Throttle.named('t').cost(Cost.data('n')).limit(50, '1s').rate(100, '1s', { burst: 40 }).concurrency(30)]);
    expect(jobCost(throttle, { n: 30 }, {})).toEqual({ cost: 30 });
    expect(jobCost(throttle, { n: 31 }, {})).toEqual({ error: "Throttle 't': this job costs 31, more than the 30 its limits let go at once (concurrency 30): it could never be delivered. Split the job, or raise the limit." });
    for (const n of [0, -3, 2.5, '7', null, 2 ** 53, true]) expect(jobCost(throttle, { n }, {})).toHaveProperty('error');
    expect(jobCost(throttle, {}, {})).toHaveProperty('error', expect.stringMatching(/this job's is missing/));
    const fallback = mergeDeclarations([Throttle.named('t').cost(Cost.data('n'), { default: 5 }).limit(10, '1s')]);
    expect(jobCost(fallback, { n: 'many' }, {})).toEqual({ cost: 5 });
    expect(jobCost(mergeDeclarations([Throttle.named('t').cost(Cost.attribute('w')).limit(10, '1s')]), {}, { w: 4 })).toEqual({ cost: 4 });
    expect(jobCost(mergeDeclarations([Throttle.named('t').limit(10, '1s')]), { n: 500 }, {})).toEqual({ cost: 1 });
  });

  it('is counted in leased delivery too; a leased rate lets a job cost at most its burst less what it refills in the lease', () => {
    const entry = (queue: string, delivery: 'exact' | 'leased', throttle = Throttle.named('tok').cost(Cost.data('n')).limit(100, '1m')): RegistryEntry => ({
      workerId: `w-${queue}`, queue, prefix: 'bull', delivery, leaseMs: 100, declarations: [declarationData(throttle)],
    });
    expect(effectiveThrottle([entry('a', 'exact'), entry('b', 'leased')], 'tok').costSpec).toBeDefined();
    // rate 100/s, burst 40, leased with h = 100 ms: a grant fits 40 - 100 * 100 / 1000 = 30 at once.
    const rated = Throttle.named('tok').cost(Cost.data('n')).rate(100, '1s', { burst: 40 });
    const leased = effectiveThrottle([entry('a', 'exact', rated), entry('b', 'leased', rated)], 'tok');
    expect(costCapacity(leased)).toBe(30);
    expect(jobCost(leased, { n: 30 }, {})).toEqual({ cost: 30 });
    expect(jobCost(leased, { n: 31 }, {})).toEqual({
      error: "Throttle 'tok': this job costs 31, more than the 30 its limits let go at once (burst 40 of its rate, less the 10 it refills within the 100 ms a leased token may be spent after its grant (leaseMs of the leased workers)): it could never be delivered. Split the job, or raise the limit.",
    });
    // Exact workers alone keep the rate at processor start (a deadline of 100 ms) and still let one job take the whole burst.
    expect(effectiveThrottle([entry('a', 'exact', rated)], 'tok').rateLeaseMs).toBe(100);
    expect(costCapacity(effectiveThrottle([entry('a', 'exact', rated)], 'tok'))).toBe(40);
  });
});
