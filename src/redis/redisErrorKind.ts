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

/**
 * Whether a Redis error can heal by waiting, as a ThrottledWorker judges it (docs/redis.md, "When Redis refuses
 * a call"). For ioredis Cluster's "Too many Cluster redirections", the last error it wraps decides.
 * @param error An error from ioredis or from a Redis reply; anything else is judged by its text.
 * @returns `'permanent'` for NOPERM, CROSSSLOT, WRONGPASS, NOAUTH, WRONGTYPE, an unknown command, an ACL refusal
 *   inside a script or a script the server rejects; `'transient'` for anything else: a lost connection, LOADING,
 *   OOM, BUSY, READONLY, MOVED, NOSCRIPT, or an error it does not know.
 * @example
 * ```ts
 * worker.on('error', (err) => {
 *   // a setup problem (ACL, credentials, Cluster layout): waiting does not fix it
 *   if (redisErrorKind(err) === 'permanent') logger.error(err, 'Redis setup');
 * });
 * ```
 */
export function redisErrorKind(error: unknown): RedisErrorKind {
  // ioredis Cluster gives up on a command after maxRedirections (16) redirections or retries (MOVED, ASK,
  // TRYAGAIN, CLUSTERDOWN, a closed connection during a failover): what counts is the last error it wrapped.
  const wrapped = lastClusterError(error);
  if (wrapped !== undefined) return redisErrorKind(wrapped);
  const code = redisErrorCode(error);
  if (code && TRANSIENT_CODES.has(code)) return 'transient';
  if (code && PERMANENT_CODES.has(code)) return 'permanent';
  const message = messageOf(error);
  // Anything else (connection lost, refused, reset, timed out, an unknown error) is worth another try.
  return PERMANENT_MESSAGES.some((pattern) => pattern.test(message)) ? 'permanent' : 'transient';
}

/**
 * Errors that say the call got no answer from Redis, so it may or may not have run (the connection closed or
 * was refused, a timeout), or that Redis refused to run it for now (the slot is moving or has no master, the
 * node is loading or a replica, the cluster is down): a call of either kind may be made again, and is
 * expected to get an answer once the failover is over. A reply of the script itself (a negative code, an
 * error it raised) is not one of them.
 */
export function failedInTransit(error: unknown): boolean {
  if (error instanceof Error && typeof (error as { code?: unknown }).code === 'number') return false;
  const wrapped = lastClusterError(error);
  if (wrapped !== undefined) return redisErrorKind(wrapped) === 'transient';
  const code = redisErrorCode(error);
  if (code && TRANSIENT_CODES.has(code)) return true;
  const errno = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  if (typeof errno === 'string' && IN_TRANSIT_ERRNOS.has(errno)) return true;
  return IN_TRANSIT_MESSAGES.some((pattern) => pattern.test(messageOf(error)));
}

/** Socket errors of a call that got no reply. */
const IN_TRANSIT_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTCONN']);

/** ioredis's own messages for a call that got no reply (its errors carry no reply code). */
const IN_TRANSIT_MESSAGES: readonly RegExp[] = [
  /^Connection is closed\.?$/,
  /\bECONN(REFUSED|RESET|ABORTED)\b|\bEPIPE\b|\bETIMEDOUT\b/,
  /^Command timed out/,
  /^Stream isn't writeable/,
  /^Cluster isn't ready/,
  /^Failed to refresh slots cache/,
  /^None of startup nodes is available/,
  /^Reached the max retries per request limit/,
  /^Connection in subscriber mode/,
];

const TOO_MANY_REDIRECTIONS = /^Too many Cluster redirections\. Last error: (?:\w*Error: )?([\s\S]*)$/;

/** The error ioredis Cluster last saw before it gave up ("Too many Cluster redirections. Last error: ..."), if that is what this is. */
function lastClusterError(error: unknown): Error | undefined {
  const match = TOO_MANY_REDIRECTIONS.exec(messageOf(error));
  return match ? new Error(match[1]) : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
