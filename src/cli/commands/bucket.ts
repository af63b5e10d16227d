import { Command } from 'commander';
import { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import { BucketStats } from '../../admin/types';
import { KeyValue } from '../../declarations/Key';
import { formatBucketKey, formatCount, formatLimit, formatRate, formatRelative, formatRemaining, plural, table } from '../format';
import { parseKeyArgs } from '../keyArgs';
import { runCommand, toJson } from '../run';

export interface BucketOptions {
  json?: boolean;
}

/**
 * `bullmq-throttle bucket <name> [key...]`: one bucket's counted deliveries per limit, jobs waiting and
 * when room frees up. No key values: an unkeyed throttle's one bucket, or a keyed throttle's missing-key bucket.
 */
export async function bucketCommand(admin: ThrottleAdmin, name: string, key: readonly KeyValue[] | null, options: BucketOptions = {}): Promise<string> {
  const stats = await admin.throttleBucket(name, key);
  return options.json ? toJson(stats) : formatBucketStats(stats);
}

export function formatBucketStats(stats: BucketStats): string {
  const lines = [
    `bucket ${formatBucketKey(stats.key)} of throttle ${stats.throttle}`,
    ...table([
      ['limit', 'counted now', 'room'],
      ...stats.limits.map((l) => [
        formatLimit(l),
        `${formatCount(l.counted)} / ${formatCount(l.max)}`,
        l.roomAt === null ? 'room now' : `full, room ${formatRelative(l.roomAt, stats.at)}`,
      ]),
      ...(stats.rate ? [[
        `rate ${formatRate(stats.rate)}`,
        `${formatCount(stats.rate.room)} may go now`,
        stats.rate.roomAt === null ? 'room now' : `empty, room ${formatRelative(stats.rate.roomAt, stats.at)}`,
      ]] : []),
      ...(stats.inFlight ? [[
        `concurrency ${formatCount(stats.inFlight.max)}`,
        `${formatCount(stats.inFlight.counted)} / ${formatCount(stats.inFlight.max)} in flight`,
        stats.inFlight.counted < stats.inFlight.max ? 'room now' : 'full, room as one ends',
      ]] : []),
    ], { indent: '  ' }),
    ...table([
      ...(stats.paused ? [['paused', formatRemaining(stats.paused.until, stats.at)] as [string, string]] : []),
      ...(stats.adaptive ? [['adaptive', `live ${formatCount(stats.adaptive.live)} of ${formatCount(stats.adaptive.ceiling)} (min ${formatCount(stats.adaptive.min)})${stats.adaptive.loweredAt === null ? '' : `, lowered by a 429 ${formatRelative(stats.adaptive.loweredAt, stats.at)}`}`] as [string, string]] : []),
      ['binding now', stats.bindingNow ?? 'nothing: it has room'],
      ['waiting', `${plural(stats.waiting, 'job')} held on this bucket`],
      ['next room', stats.nextRoomAt === null ? 'when resumed' : stats.nextRoomAt <= stats.at ? 'now' : formatRelative(stats.nextRoomAt, stats.at)],
    ], { indent: '  ' }),
  ];
  return lines.join('\n');
}

export const KEY_HELP = `
Key values are strings as written: 'bucket per-customer acme' is the bucket
of key 'acme'. A value that is a number or a boolean in the jobs is written
with a json: prefix, since 42, "42" and true are three different buckets:
  bullmq-throttle bucket per-account json:42
  bullmq-throttle bucket flags json:true
(json:"text" is the string text, for a string that itself starts with json:).
A key of several parts takes one value per part, in order. No key values:
an unkeyed throttle's one bucket, or, for a keyed throttle, the shared bucket
of jobs missing the key.`;

export function registerBucket(program: Command): void {
  program
    .command('bucket')
    .description('one bucket of a throttle: deliveries counted per limit, jobs waiting, when room frees up')
    .argument('<name>', 'the throttle name')
    .argument('[key...]', 'the key values naming the bucket (strings; json:<value> for numbers and booleans)')
    .addHelpText('after', KEY_HELP)
    .action(async (name: string, key: string[], _options: unknown, command: Command) => {
      const values = parseKeyArgs(key ?? []);
      await runCommand(command, (admin, globals) => bucketCommand(admin, name, values, { json: globals.json }));
    });
}
