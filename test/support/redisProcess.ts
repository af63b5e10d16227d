import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { redisBinary } from './redisBinaries';
import { tryRedisCommand } from './redisAdmin';
import { sleep } from './waitUntil';

export type RedisSignal = 'SIGKILL' | 'SIGTERM' | 'SIGSTOP' | 'SIGCONT';
export type RedisProcessState = 'running' | 'stopped' | 'exited';

/** How to start one redis-server: the same spec starts it again on the same port and directory (a restart). */
export interface RedisProcessSpec {
  port: number;
  /** Its own directory: working directory, `--dir`, logs, cluster config or sentinel conf. */
  dir: string;
  /** Arguments after the binary, e.g. `['--port', '7000', ...]` or `['sentinel.conf', '--sentinel']`. */
  args: string[];
}

/**
 * One redis-server child process (never daemonized, so its pid is ours to signal). Its stderr and log go to
 * files in its directory, not to pipes, and the child is unref'd: a test that forgets to stop it does not keep
 * jest alive, and the exit hook of {@link RedisProcessGroup} then kills it.
 */
export class RedisProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private currentState: RedisProcessState = 'exited';

  constructor(readonly spec: RedisProcessSpec, private readonly onChange: () => void) {}

  get port(): number { return this.spec.port; }
  get state(): RedisProcessState { return this.currentState; }
  /** The pid while the process lives (running or SIGSTOPped), else undefined. */
  get pid(): number | undefined { return this.currentState === 'exited' ? undefined : this.child?.pid; }

  /** Spawns it and waits until it answers PING; throws with the end of its log when it exits or stays silent. */
  async start(timeoutMs = 10_000): Promise<void> {
    if (this.currentState !== 'exited') throw new Error(`redis-server on port ${this.port} is already ${this.currentState}`);
    const stderrFd = openSync(join(this.spec.dir, 'stderr.log'), 'a');
    const child = spawn(redisBinary('redis-server'), this.spec.args, { cwd: this.spec.dir, stdio: ['ignore', 'ignore', stderrFd] });
    closeSync(stderrFd);
    child.unref();
    this.child = child;
    this.currentState = 'running';
    this.exited = new Promise((resolve) => {
      const ended = (): void => {
        if (this.child === child && this.currentState !== 'exited') { this.currentState = 'exited'; this.onChange(); }
        resolve();
      };
      child.once('exit', ended);
      child.once('error', ended); // could not be spawned: no 'exit' follows
    });
    this.onChange();

    const deadline = Date.now() + timeoutMs;
    while ((await tryRedisCommand(this.port, ['PING'], 500)) !== 'PONG') {
      const exited = this.hasExited(); // set by the 'exit' listener meanwhile
      if (exited || Date.now() > deadline) {
        await this.kill('SIGKILL');
        throw new Error(`redis-server on port ${this.port} did not start (${exited ? 'it exited' : `no PONG within ${timeoutMs} ms`}):\n${this.logTail()}`);
      }
      await sleep(50);
    }
  }

  private hasExited(): boolean { return this.currentState === 'exited'; }

  /** Sends a signal; SIGKILL and SIGTERM return once the process has exited. */
  async kill(signal: RedisSignal): Promise<void> {
    const child = this.child;
    if (!child || this.currentState === 'exited') return;
    if (signal === 'SIGTERM' && this.currentState === 'stopped') child.kill('SIGCONT'); // else SIGTERM stays pending
    child.kill(signal);
    if (signal === 'SIGSTOP') this.currentState = 'stopped';
    if (signal === 'SIGCONT') this.currentState = 'running';
    if (signal === 'SIGKILL' || signal === 'SIGTERM') {
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await this.exited;
      clearTimeout(timer);
    }
  }

  /** The last lines of its log and stderr, for error messages. */
  logTail(lines = 15): string {
    return ['redis.log', 'stderr.log']
      .map((name) => join(this.spec.dir, name))
      .filter((path) => existsSync(path))
      .map((path) => readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n'))
      .filter((text) => text.length > 0)
      .join('\n') || '(no log)';
  }
}
