/**
 * The identity of the Redis node counting the throttle namespace, as this worker (or Grantor) last saw it
 * recorded (lua/includes/nodeIdentity.lua), read on each heartbeat (a Grantor's: src/grant/grantRecovery.ts).
 * Sent with every delivery or grant call, it lets the script tell a node that lost the namespace's record
 * (restarted from a snapshot saved before its first delivery, a replica that never received it) from a
 * namespace that is new: the first holds as after any restart, since deliveries seen counted are forgotten there.
 */
export class NamespaceIdentity {
  private seen = '';

  /** '' until the worker has seen one recorded. */
  get known(): string {
    return this.seen;
  }

  /** The record's `id` as a heartbeat read it (null: no record). */
  note(id: string | null): void {
    // A record that is gone keeps the identity seen before: that is what the next delivery call must tell.
    if (id) this.seen = id;
  }
}
