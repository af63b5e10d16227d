/**
 * What a delivery call (or a lease of tokens) got from Redis was made on a master that turned out to be
 * deposed before a replica acknowledged it (src/redis/ReplicaConfirmation.ts): its jobs do not start, and
 * Redis drops the call's writes when the node resyncs as a replica. Delivery tries again on the new master.
 */
export class DeliveryVoidedError extends Error {
  constructor(
    message: string,
    /**
     * The error the node's replica check got, when an error is what showed the call void (MOVED, READONLY, no
     * answer before the time ran out); undefined when the node answered that it is no longer the master, or the
     * Sentinels named another one.
     */
    readonly cause?: unknown,
  ) {
    super(message);
    this.name = new.target.name;
  }
}
