import { join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { Redis } from 'ioredis';
import { Cost } from '../../src/declarations/Cost';
import { Key, KeyPart } from '../../src/declarations/Key';
import { mergeDeclarations } from '../../src/declarations/mergeDeclarations';
import { Missing } from '../../src/declarations/Missing';
import { Throttle } from '../../src/declarations/Throttle';
import { bundleLua } from '../../src/lua/luaBundler';
import { JobClassifier } from '../../src/queueState/jobClassifier';
import { luaClassSpec } from '../../src/queueState/luaClassSpec';
import { configGeneration, QueueConfig } from '../../src/queueState/queueConfig';
import { newRedis } from '../support/redis';

const lua = bundleLua(join(__dirname, '..', 'lua', 'classifyJob.lua'));

/** Names whose encodings sort differently from the names themselves, and one a prefix of another. */
const NAMES = ['a', 'a=b', 'a b', 'B', 'per:cust{omer}', 'γ', '~x', 'a-'];
const SEGMENTS = ['customer', 'id', 'account', 'x y', 'ü'];
const arbPart: fc.Arbitrary<KeyPart> = fc.oneof(
  fc.constant(Key.name()),
  fc.array(fc.constantFrom(...SEGMENTS), { minLength: 1, maxLength: 2 }).map((path) => Key.data(path.join('.'))),
);
const arbCost = fc.record({
  path: fc.array(fc.constantFrom(...SEGMENTS), { minLength: 1, maxLength: 2 }).map((path) => path.join('.')),
  fallback: fc.option(fc.constantFrom(1, 3, 700), { nil: undefined }),
});
const arbThrottles = fc.uniqueArray(
  fc.record({
    name: fc.constantFrom(...NAMES), parts: fc.option(fc.array(arbPart, { minLength: 1, maxLength: 2 }), { nil: undefined }), unthrottled: fc.boolean(),
    cost: fc.option(arbCost, { nil: undefined }), max: fc.constantFrom(5, 500),
  }),
  { minLength: 1, maxLength: 4, selector: (t) => t.name },
);

const arbScalar = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom('acme', 'a b', 'x%y', "it's", '(~*!)', 'é', '\u0000', 'a\nb', '{x}'),
  fc.integer({ min: -1000, max: 1000 }),
  fc.constantFrom(0, -0, 2 ** 53 - 1, 2 ** 53, 1e21, 1.5, -2.25),
  fc.boolean(),
  fc.constant(null),
);
const arbValue = fc.oneof({ weight: 4, arbitrary: arbScalar }, { weight: 1, arbitrary: fc.array(arbScalar, { maxLength: 2 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.constantFrom(...SEGMENTS), arbScalar, { maxKeys: 2 }) });
const arbData = fc.oneof(
  { weight: 6, arbitrary: fc.dictionary(fc.constantFrom(...SEGMENTS), arbValue, { maxKeys: 4 }).map((data) => JSON.stringify(data)) },
  { weight: 1, arbitrary: fc.constantFrom('not json', '{"customer": 0x10}', '{"customer": 1,}', '{"customer":"\\ud800"}', '[1,2]', '"text"', '{"customer":"a"} ', '{\n"customer": "pretty"\n}') },
);
const arbName = fc.option(fc.oneof(fc.constantFrom('charge', 'refund', 'a b', ''), fc.string({ maxLength: 4 })), { nil: null });

describe('classifying jobs inside the delivery script', () => {
  let redis: Redis;
  beforeAll(() => { redis = newRedis(); });
  afterAll(async () => { await redis.quit(); });

  it('gives every job the class the TypeScript classifier gives it, or leaves the job to it', async () => {
    const classifier = new JobClassifier(undefined, pino({ level: 'silent' }), 'q');
    let classifiedInLua = 0;
    let costedInLua = 0;
    let runs = 0;
    await fc.assert(fc.asyncProperty(arbThrottles, arbData, arbName, async (declared, data, name) => {
      const throttles = declared.map(({ name: throttleName, parts, unthrottled, cost, max }) => {
        const throttle = Throttle.named(throttleName);
        const keyed = parts ? throttle.key(parts) : throttle;
        const costed = cost ? keyed.cost(Cost.data(cost.path), cost.fallback === undefined ? {} : { default: cost.fallback }) : keyed;
        return mergeDeclarations([(unthrottled ? costed.whenKeyMissing(Missing.Unthrottled) : costed).limit(max, '1s')]);
      }).sort((a, b) => (a.name < b.name ? -1 : 1));
      const spec = luaClassSpec(throttles, []);
      expect(spec).not.toBe('');
      const config: QueueConfig = { gen: configGeneration(throttles), throttles, luaSpec: spec };
      const placement = classifier.place({ id: '1', name, data, opts: '{}', priority: '0', storedAttributes: null }, config);
      const expected = placement.member;
      const member = await redis.eval(lua, 0, spec, config.gen, name ?? '', data, name === null ? '0' : '1');
      runs++;
      if (member !== null) {
        classifiedInLua++;
        if (String(member).includes('$')) costedInLua++;
        expect(member).toBe(expected);
        // A cost the worker would fail the job for is never counted by the script.
        expect(placement.costError).toBeUndefined();
      }
    }), { numRuns: 600 });
    // Most jobs are plain JSON with ASCII keys: the script must classify them, not leave them all to the worker.
    expect(classifiedInLua).toBeGreaterThan(runs / 3);
    // And jobs with a cost other than 1 among them (a cost is part of the class).
    expect(costedInLua).toBeGreaterThan(runs / 50);
  });

  it('leaves attribute keys, JavaScript-only paths and workers that compute attributes to the TypeScript classifier', () => {
    const throttle = (part: KeyPart) => mergeDeclarations([Throttle.named('t').key([part]).limit(1, '1s')]);
    expect(luaClassSpec([throttle(Key.attribute('a'))], [])).toBe('');
    expect(luaClassSpec([mergeDeclarations([Throttle.named('t').cost(Cost.attribute('tokens')).limit(100, '1m')])], [])).toBe('');
    expect(luaClassSpec([mergeDeclarations([Throttle.named('t').cost(Cost.data('usage.length')).limit(100, '1m')])], [])).toBe('');
    for (const path of ['items.0', 'items.length', 'constructor', 'a.toString', 'a.__proto__']) {
      expect(luaClassSpec([throttle(Key.data(path))], [])).toBe('');
    }
    const plain = [throttle(Key.data('customer'))];
    expect(luaClassSpec(plain, [{ workerId: 'w', queue: 'q', prefix: 'bull', declarations: [], attributes: false }])).not.toBe('');
    expect(luaClassSpec(plain, [{ workerId: 'w', queue: 'q', prefix: 'bull', declarations: [], attributes: true }])).toBe('');
    expect(luaClassSpec(plain, [{ workerId: 'w', queue: 'q', prefix: 'bull', declarations: [] }])).toBe('');
  });
});
