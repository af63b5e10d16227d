/**
 * Tells a Redis error that waiting can heal (a failover, a restart, memory freed) from one that only a change
 * of setup can (ACL, Cluster layout, credentials, a missing command, a script the server rejects): the first
 * is retried with backoff and reported sparingly, the second fails a worker's start at once.
 */
export type RedisErrorKind = 'permanent' | 'transient';

/** Reply codes that mean the server is busy, starting, failing over or out of memory: they pass. */
const TRANSIENT_CODES = new Set([
  'LOADING', 'OOM', 'CLUSTERDOWN', 'TRYAGAIN', 'MASTERDOWN', 'BUSY', 'READONLY', 'NOREPLICAS', 'MOVED', 'ASK',
  // ioredis loads the script again on NOSCRIPT (after a restart or SCRIPT FLUSH).
  'NOSCRIPT', 'UNBLOCKED', 'EXECABORT',
]);

/** Reply codes that no amount of waiting changes. */
const PERMANENT_CODES = new Set(['NOPERM', 'CROSSSLOT', 'WRONGPASS', 'NOAUTH', 'WRONGTYPE']);

/** Messages (under the generic ERR code, or from ioredis) that no amount of waiting changes. */
const PERMANENT_MESSAGES: readonly RegExp[] = [
  /unknown command/i,
  /unknown subcommand/i,
  /invalid username-password pair/i,
  // Cluster: a script touched a key of a slot this node does not serve ("Lua script ..." before Redis 7).
  /attempted to access a non local key/i,
  // A script called a command, or touched a key, that the ACL user may not.
  /can't access at least one of the keys/i,
  /can't run this command or subcommand/i,
  // The server rejected one of the scripts: it does not compile, or failed while running (a bug, not a state).
  /Error compiling script/i,
  /user_script:\d+: /,
];

/** The reply's code: its first word, or the code of the error a script's redis.call raised (Redis 6 wraps it in ERR). */
export function redisErrorCode(error: unknown): string | undefined {
  const message = messageOf(error);
  const inner = /: -([A-Z]{3,})\b/.exec(message)?.[1];
  const first = /^([A-Z]{3,})\b/.exec(message)?.[1];
  return first === 'ERR' && inner ? inner : first;
}

export function redisErrorKind(error: unknown): RedisErrorKind {
  const code = redisErrorCode(error);
  if (code && TRANSIENT_CODES.has(code)) return 'transient';
  if (code && PERMANENT_CODES.has(code)) return 'permanent';
  const message = messageOf(error);
  // Anything else (connection lost, refused, reset, timed out, an unknown error) is worth another try.
  return PERMANENT_MESSAGES.some((pattern) => pattern.test(message)) ? 'permanent' : 'transient';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
