import { createHash } from 'node:crypto';
import { docsUrl } from '../docs/docsLinks';
import { RedisSetupError } from '../errors/RedisSetupError';
import { defaultLuaScripts } from '../lua/scripts';
import { RedisClient } from './connection';
import { redisErrorCode } from './redisErrorKind';

/** The page that explains what Redis needs (ACL, Cluster, persistence); messages point there. */
const SEE = `see ${docsUrl('redis.md')}`;
const LIST = `${docsUrl('redis.md', 'redis-acl')} lists every command a ThrottledWorker needs`;
/** Most keys of a refused call probed one by one to find the one the ACL denies. */
const MAX_PROBES = 24;

export interface FailureContext {
  /** Who met the error, e.g. "ThrottledWorker('orders')". */
  who: string;
  prefix: string;
  /** The throttle namespace (ThrottledWorker's throttlePrefix); the prefix when not set. */
  namespace?: string;
}

/** What a failed command was: ioredis records the command on every error reply. */
interface FailedCommand {
  /** 'evalsha' or 'eval' for scripts, otherwise the command, e.g. 'client'. */
  name: string;
  /** The script's name in lua/ when it is one of ours, else undefined. */
  script?: string;
  keys: string[];
}

/**
 * Turns an error that waiting cannot heal into a RedisSetupError that says which key or command, why, and
 * what to change. For a denied key it asks Redis which of the call's keys the user may not read (one EXISTS
 * each), since Redis's reply does not say.
 */
export async function describeRedisError(error: unknown, client: RedisClient | undefined, context: FailureContext): Promise<RedisSetupError> {
  const reply = error instanceof Error ? error.message : String(error);
  const code = redisErrorCode(error) ?? 'ERR';
  const command = failedCommand(error);
  const what = command?.script ? `script '${command.script}'`
    : command?.name === 'evalsha' || command?.name === 'eval' ? 'one of bullmq\'s scripts'
    : command ? `command '${command.name.toUpperCase()}'` : 'a command';
  // Without a client (the connection's own start failed) the user's name is unknown here.
  const name = client ? usernameOf(client) : undefined;
  const user = name ?? '<user>';
  const theUser = name ? `Redis ACL user '${name}'` : "the connection's Redis ACL user";
  const namespace = context.namespace ?? context.prefix;
  // Per-queue keys sit under bullmq's own '<prefix>:<queue>:'; the throttle namespace under '<namespace>::'.
  const pattern = namespace === context.prefix || namespace.startsWith(`${context.prefix}:`) ? `~${context.prefix}:*` : `~${context.prefix}:* ~${namespace}::*`;
  const start = `${context.who}: `;
  const original = ` (Redis replied: ${reply.split('\n')[0].replace(/\.$/, '')})`;

  if (/can't run this command or subcommand/i.test(reply)) {
    const line = /@user_script:(\d+)/.exec(reply)?.[1];
    return new RedisSetupError(
      `${start}${theUser} may not run a command that ${what} calls${line ? ` (at its line ${line})` : ''}${original}. ` +
        `Allow every command a ThrottledWorker needs (${docsUrl('redis.md', 'redis-acl')} lists them), e.g. ACL SETUSER ${user} +@read +@write +@scripting -@dangerous +time +info +client|setname +client|list.`,
      code, error,
    );
  }
  if (/^NOPERM\b.*\bcommand\b/.test(reply) || /no permissions to run/.test(reply)) {
    const denied = /'([^']+)' command/.exec(reply)?.[1] ?? command?.name ?? 'a command';
    return new RedisSetupError(
      `${start}${theUser} may not run the command '${denied}'${original}. ` +
        `Allow it, e.g. ACL SETUSER ${user} +${denied} (${LIST}).`,
      code, error,
    );
  }
  if (code === 'NOPERM' || /can't access at least one of the keys/i.test(reply)) {
    const denied = command && client ? await deniedKeys(client, command.keys) : [];
    const keys = denied.length > 0 ? denied : command?.keys ?? [];
    const named = denied.length > 0
      ? `key${denied.length > 1 ? 's' : ''} ${quoted(denied)}`
      : keys.length > 0 ? `one of the keys ${quoted(keys.slice(0, 6))}${keys.length > 6 ? ', ...' : ''}` : 'a key';
    return new RedisSetupError(
      `${start}${theUser} may not access ${named}, used by ${what}${original}. ` +
        `Grant read and write access to bullmq's keys of the queues ('${context.prefix}:<queue>:*', which hold this package's ` +
        `per-queue keys too) and to the throttle namespace ('${namespace}::*'), e.g. ACL SETUSER ${user} ${pattern}; ${SEE}.`,
      code, error,
    );
  }
  if (code === 'CROSSSLOT' || /attempted to access a non local key/i.test(reply)) {
    return new RedisSetupError(
      `${start}the keys of ${what} are in different Redis Cluster hash slots${original}. ` +
        `A ThrottledWorker's scripts touch bullmq's keys of the queue and this package's keys of it in one call: give the ` +
        `queue name a hash tag (each queue in a slot of its own, e.g. '{orders}') or the prefix one (every queue in one slot, ` +
        `e.g. prefix: '{${context.prefix.replace(/[{}]/g, '')}}'), as bullmq recommends for Cluster; ${SEE}.`,
      code, error,
    );
  }
  if (code === 'WRONGPASS' || code === 'NOAUTH' || /invalid username-password pair/i.test(reply)) {
    return new RedisSetupError(
      `${start}Redis refused the connection's credentials${name ? ` for user '${name}'` : ''}${original}. ` +
        `Check the username and password in the connection options (and that the ACL user is enabled: ACL SETUSER ${user} on).`,
      code, error,
    );
  }
  if (/unknown (sub)?command/i.test(reply)) {
    return new RedisSetupError(
      `${start}Redis does not know ${what}${original}. ` +
        `It is renamed or disabled on this server (rename-command), or the server is older than bullmq needs (Redis 6.2 or later); ${SEE}.`,
      code, error,
    );
  }
  if (code === 'WRONGTYPE') {
    return new RedisSetupError(
      `${start}a key used by ${what} holds a value of another type${original}. ` +
        `Something else writes keys under the prefix '${context.prefix}': give the queues a prefix of their own.`,
      code, error,
    );
  }
  return new RedisSetupError(
    `${start}Redis rejected ${what}${original}. ` +
      `This is a bug or a server this package does not support (Redis 6.2 or later, or Valkey): please report it with the reply above.`,
    code, error,
  );
}

function failedCommand(error: unknown): FailedCommand | undefined {
  const command = (error as { command?: { name?: unknown; args?: unknown } } | undefined)?.command;
  if (!command || typeof command.name !== 'string') return undefined;
  const args = Array.isArray(command.args) ? command.args.map(String) : [];
  const name = command.name.toLowerCase();
  if (name !== 'evalsha' && name !== 'eval') return { name, keys: keyArgs(name, args) };
  const numberOfKeys = Number(args[1]);
  const keys = Number.isInteger(numberOfKeys) ? args.slice(2, 2 + numberOfKeys) : [];
  const sha = name === 'evalsha' ? args[0] : createHash('sha1').update(args[0] ?? '').digest('hex');
  return { name, script: scriptNamed(sha), keys };
}

/** The keys of the plain commands the worker sends outside scripts (all take their key first). */
function keyArgs(name: string, args: string[]): string[] {
  return ['zadd', 'sscan', 'srandmember', 'exists', 'get', 'hgetall', 'zrange', 'llen', 'zcard', 'scard'].includes(name) && args[0] ? [args[0]] : [];
}

let shas: Map<string, string> | undefined;
function scriptNamed(sha: string): string | undefined {
  shas ??= new Map([...defaultLuaScripts().values()].map((s) => [createHash('sha1').update(s.lua).digest('hex'), s.name]));
  return shas.get(sha);
}

async function deniedKeys(client: RedisClient, keys: readonly string[]): Promise<string[]> {
  const denied: string[] = [];
  for (const key of keys.slice(0, MAX_PROBES)) {
    try {
      await client.exists(key);
    } catch (error) {
      if (/keys used as arguments|access .*key/i.test(error instanceof Error ? error.message : '')) denied.push(key);
      else return denied;
    }
  }
  return denied;
}

function usernameOf(client: RedisClient): string {
  const options = (client as { options?: { username?: string; redisOptions?: { username?: string } } }).options;
  return options?.username ?? options?.redisOptions?.username ?? 'default';
}

function quoted(keys: readonly string[]): string {
  return keys.map((k) => `'${k}'`).join(', ');
}
