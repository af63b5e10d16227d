import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisProcess, RedisProcessSpec, RedisSignal } from './redisProcess';

/**
 * The redis-server processes one harness (a cluster, a sentinel setup) started, under one temp directory.
 *
 * Three ways they end, so that no test leaves a server behind: `stop()` (afterAll); a watchdog shell, detached,
 * that polls this process's pid every second and kills the pids listed in `<root>/pids` once it is gone (a test
 * file that never reached its afterAll, jest killed); and a `process.on('exit')` hook for scripts run outside jest
 * (tsx, benchmarks). Inside jest that hook never fires: a test file's `process` is a copy with its own listeners,
 * so there the watchdog does it, within a second of jest's exit.
 */
export class RedisProcessGroup {
  readonly root: string;
  private readonly processes = new Map<number, RedisProcess>();
  private readonly pidFile: string;
  private readonly watchdog: ChildProcess;
  private stopped = false;

  constructor(label: string) {
    this.root = mkdtempSync(join(tmpdir(), `bullmq-throttle-${label}-`));
    this.pidFile = join(this.root, 'pids');
    writeFileSync(this.pidFile, '');
    this.watchdog = spawn('sh', ['-c', WATCHDOG, 'watchdog', String(process.pid), this.pidFile, this.root], { detached: true, stdio: 'ignore' });
    this.watchdog.unref();
    liveGroups.add(this);
    registerExitHook();
  }

  /** Starts a process on the spec's port (its directory is created under the group's root). */
  async start(name: string, spec: (dir: string) => RedisProcessSpec, timeoutMs?: number): Promise<RedisProcess> {
    if (this.stopped) throw new Error('this Redis harness was stopped');
    const dir = join(this.root, name);
    mkdirSync(dir, { recursive: true });
    const redis = new RedisProcess(spec(dir), () => this.writePids());
    if (this.processes.has(redis.port)) throw new Error(`port ${redis.port} already has a redis-server of this harness`);
    this.processes.set(redis.port, redis); // before it starts, so that its pid is in the watchdog's list
    try {
      await redis.start(timeoutMs);
    } catch (error) {
      this.processes.delete(redis.port);
      this.writePids();
      throw error;
    }
    return redis;
  }

  has(port: number): boolean { return this.processes.has(port); }

  get(port: number): RedisProcess {
    const redis = this.processes.get(port);
    if (!redis) throw new Error(`no redis-server of this harness on port ${port} (ports: ${[...this.processes.keys()].join(', ')})`);
    return redis;
  }

  all(): RedisProcess[] { return [...this.processes.values()]; }

  async kill(port: number, signal: RedisSignal): Promise<void> { await this.get(port).kill(signal); }

  /** Starts the process on `port` again with the same arguments and directory; a live one is SIGKILLed first. */
  async restart(port: number, timeoutMs?: number): Promise<RedisProcess> {
    const redis = this.get(port);
    await redis.kill('SIGKILL');
    await redis.start(timeoutMs);
    return redis;
  }

  /** Kills every process (SIGKILL: nothing they hold is kept) and removes the temp directory. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await Promise.all(this.all().map((redis) => redis.kill('SIGKILL')));
    this.killWatchdog();
    rmSync(this.root, { recursive: true, force: true });
    liveGroups.delete(this);
  }

  /** The exit hook's synchronous version of stop(). */
  killNow(): void {
    for (const redis of this.all()) {
      if (redis.pid !== undefined) try { process.kill(redis.pid, 'SIGKILL'); } catch { /* already gone */ }
    }
    this.killWatchdog();
    rmSync(this.root, { recursive: true, force: true });
  }

  private killWatchdog(): void {
    // The watchdog leads its own process group (detached): signalling the group ends its `sleep` too.
    if (this.watchdog.pid !== undefined) try { process.kill(-this.watchdog.pid, 'SIGKILL'); } catch { /* already gone */ }
  }

  private writePids(): void {
    if (this.stopped) return;
    const pids = this.all().map((redis) => redis.pid).filter((pid): pid is number => pid !== undefined);
    writeFileSync(this.pidFile, pids.join(' '));
  }
}

const WATCHDOG = `
parent="$1"; pidfile="$2"; root="$3"
while kill -0 "$parent" 2>/dev/null; do sleep 1; done
[ -f "$pidfile" ] && for pid in $(cat "$pidfile"); do kill -9 "$pid" 2>/dev/null; done
rm -rf "$root"
`;

const liveGroups = new Set<RedisProcessGroup>();
let exitHookRegistered = false;

function registerExitHook(): void {
  if (exitHookRegistered) return;
  exitHookRegistered = true;
  process.on('exit', () => { for (const group of liveGroups) group.killNow(); });
}
