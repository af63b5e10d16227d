import { createHash } from 'node:crypto';
import IORedis from 'ioredis';
import { encodeSegment } from '../../src/keys/keyEncoding';
import { classBucketOf } from '../../src/keys/classMember';
import { defaultLuaScripts, ScriptRunner } from '../../src/lua/scripts';
import { LeaseTokensStatus, leaseTokensRequestsOf, parseLeaseTokensReply } from '../../src/lua/calls/leaseTokens';
import type { Delivery, DeliveryCall } from '../../src/delivery/Delivery';
import { ExactDelivery } from '../../src/delivery/ExactDelivery';
import { LeasedDelivery } from '../../src/delivery/leased/LeasedDelivery';
import type { TakeReply } from '../../src/delivery/takeNextJobs';

/**
 * What this process asked of Redis, counted on the client side while installed (measurement only; nothing
 * of src/ is changed, two methods are wrapped):
 * - every command ioredis sends to a node (Redis.prototype.sendCommand: a Cluster client sends through its
 *   nodes' connections; pipelined commands count one each), scripts named by their sha;
 * - every script this package runs (ScriptRunner.prototype.run and .pipeline), and from the replies of leaseTokens and
 *   returnLeasedTokens the tokens granted and returned, per throttle;
 * - every delivery call of a ThrottledWorker (ExactDelivery/LeasedDelivery.prototype.take): the slots it
 *   served and the jobs it delivered (calls with no slot, which only deposit leased tokens, apart).
 * A token here is one delivery's share of one throttle: a lease of n for a class drawing from two throttles
 * grants n to each.
 */
export class ClientCalls {
  /** Commands sent, by name ('evalsha' resolved to the script's name where known). */
  readonly sent = new Map<string, number>();
  readonly scripts = new Map<string, number>();
  /** Per encoded throttle name: tokens asked for and granted by leaseTokens, and returned (stopped counting). */
  readonly asked = new Map<string, number>();
  readonly granted = new Map<string, number>();
  readonly returned = new Map<string, number>();
  /** Classes named in leaseTokens calls (one request per class). */
  leaseRequests = 0;
  /** Delivery calls with slots, the slots they served, the jobs they delivered; calls that only deposited. */
  readonly takes = { calls: 0, slots: 0, jobs: 0, empty: 0, depositOnly: 0 };
  private uninstall?: () => void;

  private readonly shaNames = scriptShaNames();

  install(): this {
    if (this.uninstall) return this;
    const calls = this;
    const originalRun = ScriptRunner.prototype.run;
    ScriptRunner.prototype.run = function (this: ScriptRunner, name, keys, args) {
      const reply = originalRun.call(this, name, keys, args);
      calls.noteScript(name, args, reply);
      return reply;
    };
    // Calls confirmed by a replica (src/redis/ReplicaConfirmation.ts) go in a pipeline: the same notes per script.
    const originalPipeline = ScriptRunner.prototype.pipeline;
    ScriptRunner.prototype.pipeline = function (this: ScriptRunner, scripts, commands) {
      const entries = originalPipeline.call(this, scripts, commands);
      scripts.forEach((script, i) => {
        const reply = entries.then((all) => (all[i].error ? Promise.reject(all[i].error) : all[i].reply));
        reply.catch(() => undefined);
        calls.noteScript(script.name, script.args, reply);
      });
      return entries;
    };
    const proto = IORedis.prototype as unknown as { sendCommand(command: { name: string; args: unknown[] }, ...rest: unknown[]): unknown };
    const originalSend = proto.sendCommand;
    proto.sendCommand = function (this: unknown, command, ...rest) {
      calls.noteSent(command);
      return originalSend.call(this, command, ...rest);
    };
    const takes: (() => void)[] = [ExactDelivery, LeasedDelivery].map((type) => {
      const proto = type.prototype as unknown as Delivery;
      const originalTake = proto.take;
      proto.take = function (this: Delivery, call: DeliveryCall, ...rest: unknown[]) {
        const reply = (originalTake as (...a: unknown[]) => Promise<TakeReply>).call(this, call, ...rest);
        calls.noteTake(call, reply);
        return reply;
      };
      return () => { proto.take = originalTake; };
    });
    this.uninstall = () => {
      for (const restore of takes) restore();
      ScriptRunner.prototype.run = originalRun;
      ScriptRunner.prototype.pipeline = originalPipeline;
      proto.sendCommand = originalSend;
    };
    return this;
  }

  remove(): void {
    this.uninstall?.();
    this.uninstall = undefined;
  }

  reset(): void {
    for (const map of [this.sent, this.scripts, this.asked, this.granted, this.returned]) map.clear();
    this.leaseRequests = 0;
    Object.assign(this.takes, { calls: 0, slots: 0, jobs: 0, empty: 0, depositOnly: 0 });
  }

  sentTotal(): number {
    return [...this.sent.values()].reduce((s, n) => s + n, 0);
  }

  /** Learns the names of the scripts defined on these clients (bullmq's), for describeSent. */
  learn(clients: readonly unknown[]): void {
    for (const [sha, name] of scriptShaNames(clients)) this.shaNames.set(sha, name);
  }

  /** Commands sent by name, scripts by their names ("evalsha:<sha8>" when unknown). */
  sentByName(): Map<string, number> {
    const named = new Map<string, number>();
    for (const [key, n] of this.sent) {
      const sha = key.startsWith('evalsha:') ? key.slice(8) : undefined;
      add(named, sha === undefined ? key : this.shaNames.get(sha) ?? `evalsha:${sha.slice(0, 8)}`, n);
    }
    return named;
  }

  /** "name 1.23, ..." per `per`, most first. */
  describeSent(per: number, top = 12): string {
    return [...this.sentByName().entries()].sort((a, b) => b[1] - a[1]).slice(0, top).map(([name, n]) => `${name} ${(n / per).toFixed(2)}`).join(', ');
  }

  grantedOf(throttle: string): number { return this.granted.get(encodeSegment(throttle)) ?? 0; }
  askedOf(throttle: string): number { return this.asked.get(encodeSegment(throttle)) ?? 0; }
  returnedOf(throttle: string): number { return this.returned.get(encodeSegment(throttle)) ?? 0; }

  private noteSent(command: { name: string; args: unknown[] }): void {
    const name = command.name === 'evalsha' ? `evalsha:${String(command.args[0])}` : command.name;
    this.sent.set(name, (this.sent.get(name) ?? 0) + 1);
  }

  private noteTake(call: DeliveryCall, reply: Promise<TakeReply>): void {
    if (call.tokens.length === 0) {
      this.takes.depositOnly++;
      return;
    }
    this.takes.calls++;
    this.takes.slots += call.tokens.length;
    reply.then((r) => {
      this.takes.jobs += r.jobs.length;
      if (r.jobs.length === 0) this.takes.empty++;
    }, () => undefined);
  }

  private noteScript(name: string, args: readonly unknown[], reply: Promise<unknown>): void {
    this.scripts.set(name, (this.scripts.get(name) ?? 0) + 1);
    if (name === 'leaseTokens') {
      // Read with the script's own module (an ARGV read here by hand once went stale and counted nothing granted).
      const requests = leaseTokensRequestsOf(args);
      this.leaseRequests += requests.length;
      for (const r of requests) for (const { encodedName, cost } of r.buckets.map(classBucketOf)) add(this.asked, encodedName, r.count * cost);
      reply.then((raw) => {
        const parsed = parseLeaseTokensReply(raw, requests);
        if (parsed.status !== LeaseTokensStatus.Decided) return;
        parsed.results.forEach((result, i) => {
          // Tokens per bucket: a delivery's cost there.
          for (const { encodedName, cost } of requests[i].buckets.map(classBucketOf)) add(this.granted, encodedName, result.granted * cost);
        });
      }, () => undefined);
    } else if (name === 'returnLeasedTokens') {
      // ARGV: throttlePrefix, G, then per group: bucketId, grantUs, leaseMs, nonce, count. Reply [_, stopped counting]:
      // split over the groups' throttles in proportion to what each group gave back.
      const groups: { throttle: string; count: number }[] = [];
      for (let g = 0; g < Number(args[1]); g++) groups.push({ throttle: String(args[2 + 5 * g]).split('=')[0], count: Number(args[6 + 5 * g]) });
      const offered = groups.reduce((s, g) => s + g.count, 0);
      reply.then((raw) => {
        const stopped = Number((raw as unknown[])[1]);
        if (offered === 0) return;
        for (const g of groups) add(this.returned, g.throttle, (stopped * g.count) / offered);
      }, () => undefined);
    }
  }
}

function add(map: Map<string, number>, key: string, n: number): void {
  map.set(key, (map.get(key) ?? 0) + n);
}

/** sha1 -> name of this package's scripts, and of every script defined on the given clients (bullmq's). */
export function scriptShaNames(clients: readonly unknown[] = []): Map<string, string> {
  const names = new Map<string, string>();
  for (const script of defaultLuaScripts().values()) names.set(createHash('sha1').update(script.lua).digest('hex'), script.name);
  for (const client of clients) {
    const set = (client as { scriptsSet?: Record<string, { sha?: string }> }).scriptsSet ?? {};
    for (const [name, script] of Object.entries(set)) if (script.sha && !names.has(script.sha)) names.set(script.sha, name.replace(/:.*$/, ''));
  }
  return names;
}
