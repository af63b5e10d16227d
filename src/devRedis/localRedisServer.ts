import { spawn, execFileSync, ChildProcess } from 'node:child_process';
import { createServer, Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A redis-server started by this process on a free loopback port, with no persistence. */
export interface LocalRedisServer {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

export interface LocalRedisOptions {
  /** Use this port instead of a free one (to restart a server on the port it had). */
  port?: number;
  /** Extra redis-server arguments, e.g. ['--maxmemory', '10mb']. */
  args?: string[];
  binary?: string;
  /** Working directory (kept on stop): pass the same one to a restart to find its data again. */
  dir?: string;
  /** A command the server runs under, e.g. ['valgrind', '--tool=callgrind']: the server is its last argument. */
  wrapper?: readonly string[];
  /** How long to wait for the first PING answer (default 10 s; a server under valgrind starts slower). */
  startTimeoutMs?: number;
}

export function findRedisServerBinary(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    let answer = '';
    socket.setTimeout(500);
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => { socket.destroy(); resolve(false); });
    socket.on('data', (chunk) => {
      answer += chunk.toString();
      if (answer.includes('\r\n')) { socket.destroy(); resolve(answer.startsWith('+PONG')); }
    });
    socket.connect(port, '127.0.0.1', () => socket.write('PING\r\n'));
  });
}

export async function startLocalRedisServer(options: LocalRedisOptions = {}): Promise<LocalRedisServer> {
  const binary = options.binary ?? findRedisServerBinary();
  if (!binary) {
    throw new Error('No redis-server on PATH: set REDIS_URL to a Redis you run, or install Redis (Debian: apt-get install redis-server).');
  }
  const port = options.port ?? (await freeLoopbackPort());
  // A private working directory so that nothing this server might write lands in the caller's tree.
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'bullmq-throttle-redis-'));
  const [command, ...wrapperArgs] = [...(options.wrapper ?? []), binary];
  const startTimeoutMs = options.startTimeoutMs ?? 10_000;
  const child: ChildProcess = spawn(command, [...wrapperArgs,
    '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
    '--dir', dir, '--daemonize', 'no', '--loglevel', 'warning', ...(options.args ?? []),
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk) => { stderr += chunk.toString(); });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const deadline = Date.now() + startTimeoutMs;
  while (!(await ping(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      if (ownDir) rmSync(dir, { recursive: true, force: true });
      throw new Error(`redis-server did not start on port ${port}: ${stderr.trim() || `no answer to PING within ${startTimeoutMs / 1000} s`}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  const pid = child.pid ?? -1;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    pid,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      if (ownDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
