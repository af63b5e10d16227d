import { randomBytes } from 'node:crypto';
import { ThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { runReportDeliveries } from '../lua/calls/reportDeliveries';
import { RedisClient } from '../redis/connection';
import { NamespaceIdentity } from '../recovery/namespaceIdentity';
import { GrantedWindow, GrantMemory } from './grantMemory';
import { ThrottleSpec } from '../declarations/ThrottleSpec';

/**
 * How often a Grantor that granted looks at the namespace's record for a gather: a gather waits at least 7 s
 * for those it expects (lua/includes/grantorRecovery.lua), and the sooner the Grantor tells, the sooner every
 * throttle goes on.
 */
const CHECK_EVERY_MS = 1_000;

/** What a grant call sends so that a gather after a change of node can count on this Grantor (lua/grantDeliveries-n.lua). */
export interface GrantorStanding {
  readonly grantorId: string;
  readonly countsForMs: number;
  readonly declared: string;
  readonly knownNodeId: string;
}

/**
 * What a Grantor keeps so that the node counting its namespace can lose its counts (a restart from an older
 * state, a failover to a replica that lacked them) without the throttles it granted in holding for their
 * longest window: its id, the node identity it saw, what it granted (grantMemory.ts), told to the namespace's
 * gather (lua/reportDeliveries-1.lua) once per gather, when a grant call meets one or when a check finds one
 * (every second, from its first grant until it closes). A Grantor that is gone never tells: the throttles it
 * granted in hold for their longest window then (a gather expects it until its grants left their windows).
 */
export class GrantRecovery {
  readonly grantorId = `api.${randomBytes(9).toString('base64url')}`;
  private readonly memory: GrantMemory;
  private readonly identity = new NamespaceIdentity();
  private reportedEpoch = '';
  private timer?: NodeJS.Timeout;
  private checking?: Promise<void>;
  private closed = false;

  constructor(
    private readonly leaseMs: number,
    private readonly runner: ScriptRunner,
    private readonly client: RedisClient,
    private readonly keys: ThrottleKeys,
  ) {
    this.memory = new GrantMemory(leaseMs);
  }

  /** The standing of the next grant call, which grants in these throttles. */
  standing(throttles: Iterable<ThrottleSpec>): GrantorStanding {
    for (const throttle of throttles) this.memory.noteThrottle(throttle);
    return { grantorId: this.grantorId, countsForMs: this.memory.countsForMs, declared: this.memory.declared, knownNodeId: this.identity.known };
  }

  /** A grant call's answer: what it granted is remembered, and a gather it met is told at once. */
  async granted(windows: readonly (readonly GrantedWindow[])[], gathering: string): Promise<void> {
    if (windows.length > 0) {
      const now = performance.now();
      for (const granted of windows) this.memory.noteGrant(granted, now);
      this.startChecking();
    }
    // The grants stand whatever the report does: a failed one is made again by the next check.
    if (gathering) await this.tell(gathering).catch(() => undefined);
  }

  /** Stops the checks; waits for one under way, so that the connection can close under it. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.checking;
  }

  private startChecking(): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => { if (!this.checking) this.checkInBackground(); }, CHECK_EVERY_MS);
    this.timer.unref();
    // The identity the first grant recorded: a node that loses the record is a change, not a new namespace.
    this.checkInBackground();
  }

  private checkInBackground(): void {
    // A failed read waits for the next check: a Redis that is down cannot gather either.
    this.checking = this.check().catch(() => undefined).finally(() => { this.checking = undefined; });
  }

  private async check(): Promise<void> {
    if (this.client.status === 'end') {
      // A client given as `connection` that its owner closed: nothing more is granted through it.
      clearInterval(this.timer);
      return;
    }
    // Nor is a command sent once its owner asked it to quit: written to a socket Redis is closing, it would fail
    // (ECONNRESET) and make the owner's quit() reject.
    if (this.client.status !== 'ready' || (this.client as unknown as { manuallyClosing?: boolean }).manuallyClosing) return;
    const [id, hold, gathering] = await this.client.hmget(this.keys.grantorRecord, 'id', 'hold', 'gathering');
    this.identity.note(id);
    if (hold === 'gather' && gathering) await this.tell(gathering);
  }

  private async tell(epoch: string): Promise<void> {
    if (epoch === this.reportedEpoch || this.closed) return;
    const whole = this.memory.whole;
    await runReportDeliveries(this.runner, {
      slot: this.keys.registryVersion, throttlePrefix: this.keys.throttlePrefix, workerId: this.grantorId, epoch,
      declared: this.memory.declared, peers: [], history: whole ? [] : null, leaseMs: this.leaseMs,
      counters: whole ? this.memory.report() : [],
    });
    // Told, or the gather is over: once per epoch either way (a second report of it would count nothing).
    this.reportedEpoch = epoch;
  }
}
