/**
 * Redis refuses what a worker needs in a way that waiting does not change: an ACL that denies a key or a
 * command, keys spread over Redis Cluster slots, wrong credentials, a command the server lacks, or a script
 * it rejects. The message names the key or command, the cause and the fix; `cause` is Redis's own reply.
 */
export class RedisSetupError extends Error {
  constructor(
    message: string,
    /** Redis's reply code (NOPERM, CROSSSLOT, WRONGPASS, ERR, ...). */
    readonly code: string,
    /** The error Redis (or ioredis) gave, unchanged. */
    readonly cause: unknown,
  ) {
    super(message);
    this.name = new.target.name;
  }
}
