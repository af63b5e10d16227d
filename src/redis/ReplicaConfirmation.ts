import { DeliveryVoidedError } from '../errors/DeliveryVoidedError';
import { PipelineEntry, ScriptCallSpec, ScriptRunner } from '../lua/scripts';
import { MASTER_ROLE, NodeReplicas, nodeReplicasCall, parseNodeReplicasReply } from '../lua/calls/nodeReplicas';
import { sendCall } from '../lua/calls/scriptCall';
import { redisErrorCode, redisErrorKind } from './redisErrorKind';
import { SentinelVouch } from './sentinelVouch';

/** How long one WAIT waits for a replica's acknowledgement: a replica that keeps up answers in well under 1 ms. */
const WAIT_MS = 50;
/**
 * After its last replica left, a master still asks for confirmation this long (lua/nodeReplicas-1.lua): a woken
 * master that was replaced while frozen sees its replicas leave first, and learns it was replaced some ms later
 * (Cluster: from the next messages of its peers; Sentinel: from a sentinel, seconds later, so after the grace the
 * sentinels are asked: vouched).
 */
const GRACE_MS = 2_000;
/**
 * Replicas that are connected but do not acknowledge (a full resync) are waited for this long; after it the
 * deliveries start unconfirmed: the node has answered as the same master all along, which a deposed master
 * does not do for long once it wakes.
 */
const PATIENCE_MS = 1_000;

/** How long a node found with no replica (and none lost lately) goes without the probe. */
const QUIET_MS = 1_000;

/** Codes that say the node the call ran on is no writable master now: what it counted is not kept. */
const DEPOSED_CODES = new Set(['MOVED', 'READONLY', 'NOREPLICAS', 'MASTERDOWN', 'CLUSTERDOWN']);

/**
 * Lets the deliveries (or grants) a call made start only once a replica holds them, when the node has
 * replicas. A master frozen past the failover timeout (SIGSTOP, a stalled VM) answers, for a few ms after it
 * wakes and before it learns it was replaced, the calls it is sent, counting on the state it had when it
 * froze: its successor has delivered since, so the two together may exceed a limit; Redis drops the old
 * master's writes when it resyncs, but its deliveries have happened. The old master's replicas no longer
 * acknowledge it, so a call whose writes a replica acknowledged (WAIT) did not run on a deposed master; a
 * call on a node found deposed (another role, another replication id, a redirection) is void: its jobs are
 * not started, and Redis discards them with the old master's writes.
 * The cost is in the call's own pipeline, so no round trip: a small script (lua/nodeReplicas-1.lua) on every
 * call, and a WAIT once the node is known to have replicas, which they answer within a ms while they keep up.
 */
export class ReplicaConfirmation {
  /** The last probe found replicas: the WAIT goes in the call's own pipeline. */
  private expectReplicas = false;
  /** Since when replicas are connected but acknowledge nothing (performance.now()). */
  private unackedSince?: number;
  /** Until when calls skip the probe: the node had no replica to ask, nor lost one lately (performance.now()). */
  private quietUntil = 0;

  /**
   * `recordKey`: a HASH of this package's on the node, in the slot of the calls confirmed. `sentinel`: on a
   * Sentinel connection, who vouches for a master that lost its last replica (src/redis/sentinelVouch.ts).
   */
  constructor(private readonly recordKey: () => string, private readonly sentinel?: SentinelVouch) {}

  /**
   * Runs `call` and resolves to its reply once what it delivered may start. `delivered`: the reply moved
   * something that needs confirming (no jobs: nothing to confirm). Rejects with DeliveryVoidedError when the
   * node turned out to be deposed.
   */
  async run(runner: ScriptRunner, call: ScriptCallSpec, delivered: (reply: unknown) => boolean): Promise<unknown> {
    if (performance.now() < this.quietUntil) return sendCall(runner, call);
    const wait = this.expectReplicas ? [['WAIT', 1, WAIT_MS]] : [];
    const [main, probeEntry, waitEntry] = await runner.pipeline([call, this.probe()], wait);
    if (main.error) throw main.error;
    const probe = readProbe(probeEntry);
    if (probe && probe.role === MASTER_ROLE) this.expectReplicas = probe.confirm;
    // A node without a replica cannot be replaced by one that has these writes, and one that gains a replica
    // needs longer than QUIET_MS before that replica could take over: the next second's calls skip the probe.
    // (A master that lost its replicas is asked about at every call on a Sentinel connection: its only replica may
    // have been promoted.)
    if (probe && probe.role === MASTER_ROLE && !probe.confirm && probe.replicas === 0 && !(probe.orphan && this.sentinel)) this.quietUntil = performance.now() + QUIET_MS;
    if (!delivered(main.reply)) return main.reply;
    const repliedAt = performance.now();
    // Without the probe's answer the node the call ran on cannot be told from the one that answers next.
    if (!probe) throw voided(call, 'the node did not say whether it is still the master', probeEntry?.error);
    if (probe.role !== MASTER_ROLE) throw voided(call, `the node is a ${probe.role} now`);
    if (!probe.confirm) {
      await this.vouched(call, probe, repliedAt);
      return main.reply;
    }
    refuseForGood(waitEntry);
    if (waitEntry && acknowledged(waitEntry)) return this.acked(main.reply);
    if (this.stillUnacked(probe)) return main.reply;
    await this.confirm(runner, call, probe.replid);
    return main.reply;
  }

  private probe(): ScriptCallSpec {
    return nodeReplicasCall({ record: this.recordKey(), graceMs: GRACE_MS });
  }

  /** Asks again until a replica acknowledges, the node is found deposed, or there is no replica to wait for. */
  private async confirm(runner: ScriptRunner, call: ScriptCallSpec, replid: string): Promise<void> {
    const since = performance.now();
    for (;;) {
      const [probeEntry, waitEntry] = await runner.pipeline([this.probe()], [['WAIT', 1, WAIT_MS]]);
      const probe = readProbe(probeEntry);
      if (!probe) {
        if (deposed(probeEntry.error)) throw voided(call, 'the node answered it no longer serves the slot', probeEntry.error);
        // No answer (a connection lost): the call's node may be the deposed one; its jobs cannot start unconfirmed.
        if (performance.now() - since > GRACE_MS + PATIENCE_MS) throw voided(call, 'no replica acknowledged it and the node stopped answering', probeEntry.error);
        await sleep(WAIT_MS);
        continue;
      }
      if (probe.role !== MASTER_ROLE || probe.replid !== replid) throw voided(call, 'another node serves the slot now');
      refuseForGood(waitEntry);
      if (acknowledged(waitEntry)) {
        this.acked(undefined);
        return;
      }
      if (!probe.confirm) {
        await this.vouched(call, probe, performance.now());
        return;
      }
      if (probe.replicas > 0) {
        this.unackedSince ??= since;
        if (performance.now() - since >= PATIENCE_MS) return;
      }
    }
  }

  /**
   * On a Sentinel connection, a master that lost its last replica delivers only once a majority of the sentinels,
   * asked after the call, name it as the master: its only replica may have been promoted while it was cut off or
   * frozen, and then its calls must not start (without this, min-replicas-to-write 1 was needed, which leaves a
   * one-replica set without writes after every failover).
   */
  private async vouched(call: ScriptCallSpec, probe: NodeReplicas, repliedAt: number): Promise<void> {
    if (!probe.orphan || !this.sentinel) return;
    const since = performance.now();
    for (;;) {
      const verdict = await this.sentinel.verdict(probe.runid, repliedAt);
      if (verdict === 'master') return;
      if (verdict === 'not-master') throw voidedBySentinels(call, 'a majority of the sentinels name another master');
      if (performance.now() - since > GRACE_MS + PATIENCE_MS) throw voidedBySentinels(call, 'no majority of the sentinels named it the master');
      await sleep(WAIT_MS);
    }
  }

  private acked<T>(reply: T): T {
    this.unackedSince = undefined;
    return reply;
  }

  /** Connected replicas have acknowledged nothing for PATIENCE_MS already: no call waits for them again. */
  private stillUnacked(probe: NodeReplicas): boolean {
    if (probe.replicas === 0) this.unackedSince = undefined;
    return this.unackedSince !== undefined && performance.now() - this.unackedSince >= PATIENCE_MS;
  }
}

function readProbe(entry: PipelineEntry | undefined): NodeReplicas | undefined {
  if (!entry || entry.error) return undefined;
  return parseNodeReplicasReply(entry.reply);
}

function acknowledged(entry: PipelineEntry | undefined): boolean {
  return entry !== undefined && !entry.error && Number(entry.reply) >= 1;
}

/** WAIT refused for good (the ACL lacks +wait): waiting cannot heal it, and no delivery could ever start. */
function refuseForGood(entry: PipelineEntry | undefined): void {
  if (entry?.error && redisErrorKind(entry.error) === 'permanent') throw entry.error;
}

function deposed(error: unknown): boolean {
  const code = redisErrorCode(error);
  return code !== undefined && DEPOSED_CODES.has(code);
}

function voided(call: ScriptCallSpec, why: string, cause?: unknown): DeliveryVoidedError {
  return new DeliveryVoidedError(`${call.name}: what the call delivered does not start: ${why} before a replica acknowledged it (a master replaced while frozen); Redis drops its writes`, cause);
}

function voidedBySentinels(call: ScriptCallSpec, why: string): DeliveryVoidedError {
  return new DeliveryVoidedError(`${call.name}: what the call delivered does not start: its node lost its last replica, and ${why} (its replica may have been promoted while it was cut off or frozen)`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Fails at once when the ACL refuses WAIT (it is in none of @read, @write, @scripting), which confirmation
 * needs on a Redis with replicas: better at start than on the first delivery. `WAIT 0 0` returns at once.
 */
export async function assertWaitAllowed(client: { call(command: string, ...args: (string | number)[]): Promise<unknown> }): Promise<void> {
  try {
    await client.call('WAIT', 0, 0);
  } catch (error) {
    // A replica answers that WAIT is not for it; anything that waiting heals is left to the calls that follow.
    if (redisErrorKind(error) === 'permanent') throw error;
  }
}
