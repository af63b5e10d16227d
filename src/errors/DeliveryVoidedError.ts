/**
 * What a delivery call (or a lease of tokens) got from Redis was made on a master that turned out to be
 * deposed before a replica acknowledged it (src/redis/ReplicaConfirmation.ts): its jobs do not start, and
 * Redis drops the call's writes when the node resyncs as a replica. Delivery tries again on the new master.
 */
export class DeliveryVoidedError extends Error {
  constructor(message: string, readonly cause?: unknown) {
    super(message);
    this.name = new.target.name;
  }
}
