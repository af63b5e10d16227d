import { UnknownQueueError, UnknownThrottleError, InvalidGrantError } from '../../src';
import { bucketCommand } from '../../src/cli/commands/bucket';
import { statsCommand } from '../../src/cli/commands/stats';
import { throttleCommand } from '../../src/cli/commands/throttle';
import { runWatch, watchCommand, WatchSnapshot } from '../../src/cli/commands/watch';
import { CliScenario, DELIVERED, HELD, startScenario } from './scenario';

/** The lines of `text` that match `pattern`, for checking one row of a table. */
function line(text: string, pattern: RegExp): string {
  const found = text.split('\n').find((l) => pattern.test(l));
  if (!found) throw new Error(`no line matches ${pattern} in:\n${text}`);
  return found;
}

/** A field of watch's frame with the lines it wrapped onto (indented under its label), joined: bullmq 5 counts more states than 6, which wrap sooner. */
function field(text: string, pattern: RegExp): string {
  const lines = text.split('\n');
  const at = lines.indexOf(line(text, pattern));
  let end = at + 1;
  while (end < lines.length && /^ {2,}\S/.test(lines[end]) && !/^ {2}\S/.test(lines[end])) end++;
  return lines.slice(at, end).map((l) => l.trim()).join(' ');
}

describe('cli commands, against a queue with a throttled backlog', () => {
  let s: CliScenario;
  beforeAll(async () => { s = await startScenario('cli-commands'); });
  afterAll(async () => { await s?.close(); });

  it('stats: counts, held jobs, workers and each throttle with its limits, key and declarations', async () => {
    const text = await statsCommand(s.admin, 'orders');
    expect(text).toMatch(/^queue orders {2}\(prefix test-cli-commands-/);
    expect(line(text, /^ {2}jobs /)).toContain(`completed ${DELIVERED}`);
    expect(line(text, /^ {2}throttled /)).toContain(`${HELD} jobs held: ${HELD} on full buckets, 0 being classified`);
    expect(line(text, /^ {2}oldest /)).toMatch(/waiting \d+(\.\d)?m?s on a full bucket/);
    expect(line(text, /^ {2}workers /)).toContain('2 ThrottledWorkers, 0 plain Workers');
    expect(line(text, /^throttle /)).toMatch(/^throttle +limits +key +missing key +declared by +now$/);
    expect(line(text, /^emails /)).toMatch(/^emails +5 per 1s +Key\.data\("to"\) +unthrottled +1 worker +-$/);
    expect(line(text, /^everything /)).toMatch(/^everything +1000 per 1m +\(none\) +- +1 worker +-$/);
    expect(line(text, /^per-customer /)).toMatch(/^per-customer +2 per 1m +Key\.data\("customer"\) +shared bucket +2 workers +-$/);
  });

  it('stats says what holds a throttle besides its limits: pauses, limits set at run time', async () => {
    await s.admin.pause('everything', { forMs: 297_000 });
    await s.admin.pause('per-customer', { key: ['b3'] });
    await s.admin.setLimits('emails', [{ max: 7, window: '1s' }], { ttlMs: 600_000 });
    try {
      const text = await statsCommand(s.admin, 'orders');
      expect(line(text, /^everything /)).toMatch(/ paused for 4m 5\ds more$/);
      expect(line(text, /^per-customer /)).toMatch(/ 1 bucket paused$/);
      expect(line(text, /^emails /)).toMatch(/^emails +7 per 1s .* limits set at run time for (10m|9m 5\ds) more$/);
    } finally {
      await s.admin.resume('everything');
      await s.admin.resume('per-customer');
      await s.admin.clearLimits('emails');
    }
  });

  it('stats --json: the raw QueueStats', async () => {
    const stats = JSON.parse(await statsCommand(s.admin, 'orders', { json: true }));
    expect(stats).toMatchObject({ queue: 'orders', throttled: HELD, heldByFullBuckets: HELD, throttledWorkers: 2 });
    expect(stats.counts.completed).toBe(DELIVERED);
  });

  it('throttle: buckets, waiting, the last window and the top waiting buckets', async () => {
    const text = await throttleCommand(s.admin, 'per-customer', { top: 10 });
    expect(text.split('\n')[0]).toBe('throttle per-customer');
    expect(line(text, /^ {2}limits /)).toContain('2 per 1m, for each bucket');
    expect(line(text, /^ {2}key /)).toContain('Key.data("customer"); jobs missing it share one bucket');
    expect(line(text, /^ {2}queues /)).toContain('orders (declared by 2 live ThrottledWorkers)');
    expect(line(text, /^ {2}buckets /)).toContain('5 active, 4 at their limit');
    expect(line(text, /^ {2}waiting /)).toContain(`${HELD} jobs held on full buckets`);
    expect(line(text, /^ {2}last window /)).toContain(`${DELIVERED} delivered in the last 1m, all buckets together (limit 2 per 1m per bucket)`);
    expect(line(text, /^ {2}totals /)).toContain(`${DELIVERED} delivered`);
    expect(line(text, /^top waiting buckets/)).toBe('top waiting buckets (up to 10)');
    expect(line(text, /^ {2}acme /)).toMatch(/^ {2}acme +120$/);
    // The number 7 is shown as the bucket command takes it.
    expect(line(text, /^ {2}json:7 /)).toMatch(/^ {2}json:7 +1$/);
    expect(line(text, /^ {2}b1 /)).toMatch(/^ {2}b1 +1$/);
  });

  it('throttle --top 1 lists only the bucket with most waiting', async () => {
    const text = await throttleCommand(s.admin, 'per-customer', { top: 1 });
    expect(text).toContain('top waiting buckets (up to 1)');
    expect(line(text, /^ {2}acme /)).toMatch(/120$/);
    expect(text).not.toMatch(/^ {2}b1 /m);
  });

  it('throttle of an unkeyed throttle: its one bucket counted exactly', async () => {
    const text = await throttleCommand(s.admin, 'everything');
    expect(line(text, /^ {2}key /)).toContain('(none): one bucket for every job');
    expect(line(text, /^ {2}buckets /)).toContain('1 active, 0 at their limit');
    expect(line(text, /^ {2}last window /)).toContain(`${DELIVERED} / 1,000 counted in the last 1m`);
    expect(text).toContain('no bucket has jobs waiting');
  });

  it('bucket: counted per limit, when room frees up, and jobs waiting', async () => {
    const acme = await bucketCommand(s.admin, 'per-customer', ['acme']);
    expect(acme.split('\n')[0]).toBe('bucket acme of throttle per-customer');
    expect(line(acme, /^ {2}2 per 1m /)).toMatch(/^ {2}2 per 1m +2 \/ 2 +full, room in (\d+(\.\d)?s|\d+m \d+s)$/);
    expect(line(acme, /^ {2}waiting /)).toContain('120 jobs held on this bucket');
    expect(line(acme, /^ {2}next room /)).toMatch(/in \d/);

    const b3 = await bucketCommand(s.admin, 'per-customer', ['b3']);
    expect(line(b3, /^ {2}2 per 1m /)).toMatch(/1 \/ 2 +room now$/);
    expect(line(b3, /^ {2}next room /)).toMatch(/now$/);

    // 7 the number and '7' the string are different buckets.
    const seven = await bucketCommand(s.admin, 'per-customer', [7]);
    expect(seven.split('\n')[0]).toBe('bucket json:7 of throttle per-customer');
    expect(line(seven, /^ {2}2 per 1m /)).toContain('2 / 2');
    expect(line(seven, /^ {2}waiting /)).toContain('1 job held');
    expect(line(await bucketCommand(s.admin, 'per-customer', ['7']), /^ {2}2 per 1m /)).toContain('0 / 2');

    const missing = await bucketCommand(s.admin, 'per-customer', null);
    expect(missing.split('\n')[0]).toBe('bucket (missing key) of throttle per-customer');
    const one = await bucketCommand(s.admin, 'everything', null);
    expect(one.split('\n')[0]).toBe('bucket (the one bucket) of throttle everything');
    expect(line(one, /^ {2}1000 per 1m /)).toContain(`${DELIVERED} / 1,000`);

    const json = JSON.parse(await bucketCommand(s.admin, 'per-customer', ['acme'], { json: true }));
    expect(json).toMatchObject({ throttle: 'per-customer', key: ['acme'], waiting: 120, limits: [{ max: 2, windowMs: 60_000, counted: 2 }] });
  });

  it('errors are the admin\'s own: unknown queue and throttle, wrong key arity', async () => {
    await expect(statsCommand(s.admin, 'no-such-queue')).rejects.toThrow(UnknownQueueError);
    await expect(throttleCommand(s.admin, 'no-such-throttle')).rejects.toThrow(UnknownThrottleError);
    await expect(bucketCommand(s.admin, 'per-customer', ['a', 'b'])).rejects.toThrow(InvalidGrantError);
    await expect(bucketCommand(s.admin, 'everything', ['a'])).rejects.toThrow(InvalidGrantError);
  });

  it('watch: one frame with the counts, and per throttle its buckets against each per-bucket limit', async () => {
    const text = await watchCommand(s.admin, 'orders', { intervalMs: 1000, width: 100 });
    expect(text.split('\n')[0]).toMatch(/^bullmq-throttle watch {2}queue orders {2}prefix test-cli-commands-\S+ {2}\d\d:\d\d:\d\d {2}every 1 s/);
    expect(field(text, /^jobs /)).toContain('completed 9');
    expect(line(text, /^throttled /)).toContain(`${HELD} jobs held: ${HELD} on full buckets`);
    // Headings count buckets and jobs, never events.
    expect(line(text, /^per-customer /)).toBe(`per-customer · 2 per 1m per bucket · 4 of 5 active buckets at limit · ${HELD} jobs waiting`);
    expect(line(text, /^everything /)).toBe('everything · 1000 per 1m · 0 of 1 active bucket at limit · 0 jobs waiting');
    // Keyed: each busiest bucket (most waiting) against the per-bucket limit, with the limit holding it back.
    const lines = text.split('\n');
    const heading = lines.indexOf(line(text, /^per-customer /));
    expect(lines[heading + 1]).toMatch(/^ {2}bucket +limit +counted now +waiting +held by$/);
    expect(lines[heading + 2]).toMatch(/^ {2}acme +2 per 1m +\[#{20}\] +2\/2 +120 +2 per 1m$/);
    expect(lines.slice(heading + 3, heading + 5).sort()).toEqual([
      expect.stringMatching(/^ {2}b1 +2 per 1m +\[#{20}\] +2\/2 +1 +2 per 1m$/),
      expect.stringMatching(/^ {2}json:7 +2 per 1m +\[#{20}\] +2\/2 +1 +2 per 1m$/),
    ]);
    // Unkeyed: its one bucket, counted now.
    expect(line(text, /^ {2}1000 per 1m /)).toMatch(new RegExp(`^ {2}1000 per 1m +\\[\\.{20}\\] +${DELIVERED}/1,000 +room now$`));
    // Keyed with no bucket waiting: deliveries over all its buckets, named as the events they are.
    expect(lines[lines.indexOf(line(text, /^emails /)) + 1]).toBe('  no bucket has jobs waiting · 0 deliveries in the last 1s, all buckets together');
    expectNoFigureAboveItsLimit(text);
  });

  it('watch fits an 80-column terminal: the layout, and what is drawn', async () => {
    const laidOut = (await watchCommand(s.admin, 'orders', { intervalMs: 1000, width: 80 })).split('\n');
    for (const l of laidOut) expect(columns(l)).toBeLessThanOrEqual(80);
    expect(laidOut.filter((l) => l.endsWith('…'))).toEqual([]); // it fits by its layout, not by being cut
    expect(laidOut).toContainEqual(expect.stringMatching(/^ {2}acme +2 per 1m +\[#+\] +2\/2 +120 +2 per 1m$/));

    const writes: string[] = [];
    const controller = new AbortController();
    const watching = runWatch(s.admin, 'orders', { intervalMs: 100, out: { isTTY: true, columns: 80, rows: 60, write: (t) => writes.push(t) }, signal: controller.signal });
    await waitUntilWritten(writes, 1);
    controller.abort();
    await watching;
    const drawn = visible(writes[0]).split('\n');
    expect(drawn.length).toBeGreaterThan(10);
    for (const l of drawn) expect(columns(l)).toBeLessThanOrEqual(80);
    expectNoFigureAboveItsLimit(drawn.join('\n'));
  });

  it('watch --json: one line with the queue and its throttles', async () => {
    const text = await watchCommand(s.admin, 'orders', { json: true });
    expect(text).not.toContain('\n');
    const snapshot = JSON.parse(text) as WatchSnapshot;
    expect(snapshot.queue.throttled).toBe(HELD);
    expect(snapshot.throttles.map((t) => t.name)).toEqual(['emails', 'everything', 'per-customer']);
    expect(snapshot.throttles[2].topBuckets[0]).toEqual({ key: ['acme'], waiting: 120 });
    expect(snapshot.throttles[2].topBuckets.length).toBeLessThanOrEqual(5);
  });

  it('runWatch redraws in place on a terminal until aborted', async () => {
    const writes: string[] = [];
    const controller = new AbortController();
    const watching = runWatch(s.admin, 'orders', { intervalMs: 150, out: { isTTY: true, columns: 200, rows: 60, write: (t) => writes.push(t) }, signal: controller.signal });
    await waitUntilWritten(writes, 2);
    controller.abort();
    await watching;
    expect(visible(writes[0]).startsWith('bullmq-throttle watch')).toBe(true);
    // A later frame goes back up over the last one (log-update) rather than below it.
    expect(writes.slice(1).some((w) => /\x1b\[\d*A/.test(w))).toBe(true);
    expect(writes[writes.length - 1]).toBe('\n');
  });

  it('runWatch of an unknown queue fails at once', async () => {
    const controller = new AbortController();
    await expect(runWatch(s.admin, 'no-such-queue', { out: { write: () => true }, signal: controller.signal })).rejects.toThrow(UnknownQueueError);
  });
});

/** What a terminal shows of the text: without the escape sequences. */
function visible(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');
}

/** Columns a line takes: one per code point (the scenario's text has no wide characters). */
function columns(text: string): number {
  return [...visible(text)].length;
}

/** No "counted/max" figure above its max: a full bucket reads full, not over. */
function expectNoFigureAboveItsLimit(text: string): void {
  const figures = [...text.matchAll(/(\d[\d,]*)\/(\d[\d,]*)/g)];
  expect(figures.length).toBeGreaterThan(0);
  for (const [, counted, max] of figures) expect(Number(counted.replace(/,/g, ''))).toBeLessThanOrEqual(Number(max.replace(/,/g, '')));
}

async function waitUntilWritten(writes: readonly string[], n: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (writes.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}
