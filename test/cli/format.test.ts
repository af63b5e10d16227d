import { bar, formatBucketKey, formatDuration, formatLimit, formatRelative, formatRemaining, table } from '../../src/cli/format';
import { parseKeyArg, parseKeyArgs } from '../../src/cli/keyArgs';
import { formatBucketStats } from '../../src/cli/commands/bucket';
import { UsageError, describeError } from '../../src/cli/errors';
import { parseWholeNumber, redactUrl, checkRedisUrl } from '../../src/cli/options';
import { LiveFrames } from '../../src/terminal/LiveFrames';
import { fitFrame } from '../../src/terminal/fitLines';
import { wrapItems, wrapWords } from '../../src/terminal/wrapItems';
import { UnknownQueueError } from '../../src';

describe('cli formatting helpers', () => {
  it('durations, relative times and limits', () => {
    expect(formatDuration(850)).toBe('850ms');
    expect(formatDuration(12_340)).toBe('12.3s');
    expect(formatDuration(252_000)).toBe('4m 12s');
    expect(formatDuration(3 * 3_600_000 + 5 * 60_000)).toBe('3h 5m');
    expect(formatDuration(296_620)).toBe('4m 57s');
    expect(formatDuration(2_000)).toBe('2s');
    expect(formatRemaining(301_000, 4_380)).toBe('for 4m 57s more');
    expect(formatRemaining(null, 4_380)).toBe('until resumed');
    expect(formatRelative(5_200, 1_000)).toBe('in 4.2s');
    expect(formatRelative(1_000, 4_100)).toBe('3.1s ago');
    expect(formatRelative(1_010, 1_000)).toBe('now');
    expect(formatLimit({ max: 100, windowMs: 1000 })).toBe('100 per 1s');
    expect(formatLimit({ max: 5, windowMs: 1500 })).toBe('5 per 1500ms');
  });

  it('bucket keys print as the bucket command takes them', () => {
    expect(formatBucketKey(['acme'])).toBe('acme');
    expect(formatBucketKey([42, true])).toBe('json:42 json:true');
    expect(formatBucketKey(['big spender'])).toBe('"big spender"');
    expect(formatBucketKey(['json:x'])).toBe('"json:x"');
    expect(formatBucketKey(null)).toBe('(missing key)');
    expect(formatBucketKey([])).toBe('(the one bucket)');
  });

  it('tables pad their columns; bars fill against the limit', () => {
    expect(table([['a', 'bb', 'c'], ['ccc', 'd', 'ee']], { align: ['left', 'right', 'left'] })).toEqual(['a    bb  c', 'ccc   d  ee']);
    expect(bar(5, 10, 10)).toBe('[#####.....]');
    expect(bar(0, 10, 4)).toBe('[....]');
    expect(bar(30, 10, 4)).toBe('[###+]');
  });

  it('key values are strings unless written json:<value>', () => {
    expect(parseKeyArg('42')).toBe('42');
    expect(parseKeyArg('json:42')).toBe(42);
    expect(parseKeyArg('json:true')).toBe(true);
    expect(parseKeyArg('json:"json:x"')).toBe('json:x');
    expect(parseKeyArgs([])).toBeNull();
    expect(parseKeyArgs(['acme', 'json:1.5'])).toEqual(['acme', 1.5]);
    expect(() => parseKeyArg('json:null')).toThrow(UsageError);
    expect(() => parseKeyArg('json:{"a":1}')).toThrow(/number, boolean or string/);
    expect(() => parseKeyArg('json:4x')).toThrow(/not valid JSON/);
  });

  it('options and errors', () => {
    expect(parseWholeNumber('--top', '3', 0)).toBe(3);
    expect(() => parseWholeNumber('--top', '-1', 0)).toThrow(UsageError);
    expect(() => parseWholeNumber('--top', '2.5', 0)).toThrow(/--top must be a whole number/);
    expect(() => checkRedisUrl('localhost:6379')).toThrow(/redis:\/\//);
    expect(() => checkRedisUrl('redis://127.0.0.1:6379')).not.toThrow();
    expect(redactUrl('redis://user:secret@h:1')).toBe('redis://user:***@h:1');
    expect(describeError(new UnknownQueueError("queue 'x'\nunknown"))).toBe("queue 'x' unknown");
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(describeError(refused, 'redis://127.0.0.1:1')).toBe('lost the connection to Redis at redis://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1');
  });

  it('live frames redraw in place on a terminal, rewriting only the lines that changed, and append otherwise', () => {
    const tty: string[] = [];
    const frames = new LiveFrames({ isTTY: true, columns: 40, rows: 20, write: (t) => tty.push(t) });
    frames.draw(['one', 'two']);
    frames.draw(['one', 'three']);
    expect(visible(tty[0])).toBe('one\ntwo\n');
    expect(visible(tty[1])).toBe('three\n');
    expect(tty[1]).toContain('\x1b[1A'); // back up to the line that changed
    const plain: string[] = [];
    const log = new LiveFrames({ isTTY: false, write: (t) => plain.push(t) });
    log.draw(['one', 'two']);
    log.draw(['three']);
    expect(plain).toEqual(['one\ntwo\n\n', 'three\n\n']);
  });

  it('a frame is cut to the terminal: lines to its width, the frame to its height', () => {
    const narrow: string[] = [];
    new LiveFrames({ isTTY: true, columns: 41, rows: 4, write: (t) => narrow.push(t) }).draw([`${'x'.repeat(50)}`, 'b', 'c', 'd', 'e']);
    expect(visible(narrow[0])).toBe(`${'x'.repeat(40)}…\nb\n… 3 more lines (enlarge the terminal)\n`);
    expect(fitFrame(['界'.repeat(10)], 9)).toEqual(['界界界界…']); // wide characters take two columns
  });

  it('items wrap between items, words between words', () => {
    expect(wrapItems(['waiting 0', 'active 3', 'completed 12'], 22)).toEqual(['waiting 0 · active 3', 'completed 12']);
    expect(wrapItems(['a', '', 'b'], 80)).toEqual(['a · b']);
    expect(wrapWords('emails all delivered by 0.31 s, small customers by 1.22 s', 24, '  ')).toEqual(['emails all delivered by', '  0.31 s, small', '  customers by 1.22 s']);
  });

  it('a bucket lists every limit kind it counts: windows, its rate and its concurrency', () => {
    const text = formatBucketStats({
      throttle: 'partner', key: ['acme'], limitSource: 'declared', adaptive: null, effective: null, bindingNow: 'concurrency 2', paused: null, waiting: 3, nextRoomAt: null, at: 1_000,
      limits: [{ windowMs: 1_000, max: 10, counted: 4, roomAt: null }],
      rate: { n: 5, perMs: 1_000, burst: 2, room: 1, roomAt: null },
      inFlight: { max: 2, counted: 2, leased: 0 },
    });
    expect(text).toMatch(/^ {2}10 per 1s +4 \/ 10 +room now$/m);
    expect(text).toMatch(/^ {2}rate 5 per 1s, burst 2 +1 may go now +room now$/m);
    expect(text).toMatch(/^ {2}concurrency 2 +2 \/ 2 in flight +full, room as one ends$/m);
  });
});

/** What a terminal shows of the text: without the escape sequences. */
function visible(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');
}
