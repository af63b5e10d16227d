import { bar, formatBucketKey, formatDuration, formatLimit, formatRelative, table } from '../../src/cli/format';
import { parseKeyArg, parseKeyArgs } from '../../src/cli/keyArgs';
import { UsageError, describeError } from '../../src/cli/errors';
import { parseWholeNumber, redactUrl, checkRedisUrl } from '../../src/cli/options';
import { LiveView } from '../../src/cli/liveView';
import { UnknownQueueError } from '../../src';

describe('cli formatting helpers', () => {
  it('durations, relative times and limits', () => {
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(12_340)).toBe('12.3 s');
    expect(formatDuration(252_000)).toBe('4 min 12 s');
    expect(formatDuration(3 * 3_600_000 + 5 * 60_000)).toBe('3 h 5 min');
    expect(formatRelative(5_200, 1_000)).toBe('in 4.2 s');
    expect(formatRelative(1_000, 4_100)).toBe('3.1 s ago');
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

  it('the live view redraws in place on a terminal and appends otherwise', () => {
    const tty: string[] = [];
    const view = new LiveView({ isTTY: true, columns: 40, rows: 20, write: (t) => tty.push(t) });
    view.render('one\ntwo');
    view.render('three');
    expect(tty[0]).toBe('\x1b[2Kone\n\x1b[2Ktwo\n\x1b[J');
    expect(tty[1]).toBe('\x1b[2A\x1b[2Kthree\n\x1b[J');
    const plain: string[] = [];
    const log = new LiveView({ isTTY: false, write: (t) => plain.push(t) });
    log.render('one\ntwo');
    log.render('three');
    expect(plain).toEqual(['one\ntwo\n\n', 'three\n\n']);
    const narrow: string[] = [];
    new LiveView({ isTTY: true, columns: 41, rows: 4, write: (t) => narrow.push(t) }).render(`${'x'.repeat(50)}\nb\nc\nd\ne`);
    expect(narrow[0]).toBe(`\x1b[2K${'x'.repeat(39)}…\n\x1b[2Kb\n\x1b[2K… 3 more lines (enlarge the terminal)\n\x1b[J`);
  });
});
