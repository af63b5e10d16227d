import { Command } from 'commander';
import { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import { KeyValue } from '../../declarations/Key';
import { parseWindowMs } from '../../declarations/window';
import { InvalidThrottleError } from '../../errors/InvalidThrottleError';
import { UsageError } from '../errors';
import { formatBucketKey, formatDuration, plural } from '../format';
import { requireDeclared } from '../declaredThrottle';
import { parseKeyArgs } from '../keyArgs';
import { runCommand, toJson } from '../run';

function target(name: string, key: KeyValue[] | null): string {
  return key === null ? `throttle ${name}` : `bucket ${formatBucketKey(key)} of throttle ${name}`;
}

/**
 * `bullmq-throttle pause <name> [key...] [--for 5m] [--force]`: no key values pause every bucket of the throttle.
 * A name no live worker declares is refused (a typo would pause nothing) unless --force.
 */
export async function pauseCommand(admin: ThrottleAdmin, name: string, key: KeyValue[] | null, options: { for?: string; json?: boolean; force?: boolean } = {}): Promise<string> {
  if (!options.force) await requireDeclared(admin, name, 'pause');
  let forMs: number | undefined;
  if (options.for !== undefined) {
    try {
      forMs = parseWindowMs(options.for, '--for');
    } catch (error) {
      if (error instanceof InvalidThrottleError) throw new UsageError(error.message);
      throw error;
    }
  }
  const { until } = await admin.pause(name, { ...(key === null ? {} : { key }), ...(forMs === undefined ? {} : { forMs }) });
  if (options.json) return toJson({ throttle: name, key, until });
  return `${target(name, key)} paused ${until === null ? 'until resumed' : `${forMs === undefined ? '' : `for ${formatDuration(forMs)}, `}until ${new Date(until).toISOString()}`}`;
}

/** `bullmq-throttle resume <name> [key...]`: no key values lift every pause of the throttle. */
export async function resumeCommand(admin: ThrottleAdmin, name: string, key: KeyValue[] | null, options: { json?: boolean } = {}): Promise<string> {
  const lifted = await admin.resume(name, key === null ? {} : { key });
  // Nothing lifted and nobody declares it: most likely a typo, which must not read as success.
  if (lifted === 0) await requireDeclared(admin, name, 'resume');
  return options.json ? toJson({ throttle: name, key, lifted }) : `${target(name, key)}: ${plural(lifted, 'pause')} lifted`;
}

export function registerPause(program: Command): void {
  program
    .command('pause')
    .description('pause a throttle (every bucket), or one bucket of it, for every worker: its jobs stay held, other jobs flow')
    .argument('<name>', 'the throttle name')
    .argument('[key...]', 'key values naming one bucket (strings; json:<value> for numbers and booleans); none: every bucket')
    .option('--for <duration>', "how long ('30s', '5m', '1h'); without it, until resumed")
    .option('--force', 'pause a throttle no live worker declares yet (it applies once one does)')
    .action(async (name: string, key: string[], options: { for?: string; force?: boolean }, command: Command) => {
      const values = parseKeyArgs(key ?? []);
      await runCommand(command, (admin, globals) => pauseCommand(admin, name, values, { for: options.for, force: options.force, json: globals.json }));
    });
  program
    .command('resume')
    .description("lift a throttle's pauses (every one), or one bucket's own pause")
    .argument('<name>', 'the throttle name')
    .argument('[key...]', 'key values naming one bucket; none: every pause of the throttle')
    .action(async (name: string, key: string[], _options: unknown, command: Command) => {
      const values = parseKeyArgs(key ?? []);
      await runCommand(command, (admin, globals) => resumeCommand(admin, name, values, { json: globals.json }));
    });
}
