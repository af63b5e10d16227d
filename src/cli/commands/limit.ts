import { Command } from 'commander';
import { LimitInput } from '../../admin/limitOverrides';
import { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import { KeyValue } from '../../declarations/Key';
import { isWindowText, parseWindowMs } from '../../declarations/window';
import { InvalidOptionError } from '../../errors/InvalidOptionError';
import { InvalidThrottleError } from '../../errors/InvalidThrottleError';
import { UsageError } from '../errors';
import { formatBucketKey } from '../format';
import { requireDeclared } from '../declaredThrottle';
import { parseKeyArgs } from '../keyArgs';
import { runCommand, toJson } from '../run';

/** '50/1s,1000/1m' -> [{ max: 50, window: '1s' }, { max: 1000, window: '1m' }]. */
export function parseLimitList(text: string): LimitInput[] {
  return text.split(',').map((part) => {
    const match = /^\s*(\d+)\s*\/\s*(\S+)\s*$/.exec(part);
    if (!match) throw new UsageError(`--set '${text}': each limit is N/window, such as 50/1s or 1000/1m, separated by commas.`);
    // Text from the command line: its window is checked as the API checks it (a misspelling names the fix).
    return { max: Number(match[1]), window: isWindowText(match[2]) ? match[2] : parseWindowMs(match[2], `--set '${text}'`) };
  });
}

/** `bullmq-throttle limit <name> [key...] --set 50/1s[,1000/1m] [--ttl 1h] | --clear`. */
export async function limitCommand(admin: ThrottleAdmin, name: string, key: KeyValue[] | null, options: { set?: string; clear?: boolean; ttl?: string; json?: boolean; force?: boolean }): Promise<string> {
  if (Boolean(options.set) === Boolean(options.clear)) throw new UsageError('limit: give --set N/window[,N/window] or --clear (one of them).');
  if (!options.force) await requireDeclared(admin, name, options.clear ? 'clear the limits of' : 'set the limits of');
  const where = key === null ? `throttle ${name}` : `bucket ${formatBucketKey(key)} of throttle ${name}`;
  try {
    if (options.clear) {
      await admin.clearLimits(name, key === null ? {} : { key });
      return options.json ? toJson({ throttle: name, key, cleared: true }) : `${where}: back to its declared limits`;
    }
    const limits = parseLimitList(options.set!);
    const ttlMs = options.ttl === undefined ? undefined : parseWindowMs(options.ttl, '--ttl');
    await admin.setLimits(name, limits, { ...(key === null ? {} : { key }), ...(ttlMs === undefined ? {} : { ttlMs }) });
    return options.json ? toJson({ throttle: name, key, limits, ttlMs: ttlMs ?? null }) : `${where}: limits set to ${options.set}${ttlMs ? ` for ${options.ttl}` : ' until cleared'}`;
  } catch (error) {
    if (error instanceof InvalidThrottleError || error instanceof InvalidOptionError) throw new UsageError(error.message);
    throw error;
  }
}

export function registerLimit(program: Command): void {
  program
    .command('limit')
    .description("set a throttle's window limits at run time (the whole throttle, or one bucket: a plan tier), or clear them back to the declared ones")
    .argument('<name>', 'the throttle name')
    .argument('[key...]', 'key values naming one bucket; none: the whole throttle')
    .option('--set <limits>', 'N/window, comma-separated: 50/1s,1000/1m')
    .option('--ttl <duration>', "the override lapses after this long ('10m', '1h'); without it, until cleared")
    .option('--clear', 'back to the declared limits')
    .option('--force', 'a throttle no live worker declares yet (the limits apply once one does)')
    .action(async (name: string, key: string[], options: { set?: string; clear?: boolean; ttl?: string; force?: boolean }, command: Command) => {
      const values = parseKeyArgs(key ?? []);
      await runCommand(command, (admin, globals) => limitCommand(admin, name, values, { ...options, json: globals.json }));
    });
}
