import { execFileSync } from 'node:child_process';
import { arch, cpus, platform, release, totalmem } from 'node:os';
import type { Redis } from 'ioredis';

export interface MachineInfo {
  date: string;
  node: string;
  platform: string;
  arch: string;
  cpuCount: number;
  cpuModel: string;
  totalMemoryBytes: number;
  gitCommit: string | null;
  redis: { source: string; version: string; mode: string; allocator: string; os: string };
}

/** One field of an INFO section ("redis_version:7.0.15"). */
export function infoField(info: string, field: string): string {
  const match = new RegExp(`^${field}:(.*)$`, 'm').exec(info);
  return match ? match[1].trim() : '';
}

function gitCommit(): string | null {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

/** Where the numbers were measured. The Redis URL itself is left out: it may hold a password. */
export async function machineInfo(redis: Redis, redisSource: string): Promise<MachineInfo> {
  const server = await redis.info('server');
  const memory = await redis.info('memory');
  const cpuList = cpus();
  return {
    date: new Date().toISOString(),
    node: process.version,
    platform: `${platform()} ${release()}`,
    arch: arch(),
    cpuCount: cpuList.length,
    cpuModel: cpuList[0]?.model ?? 'unknown',
    totalMemoryBytes: totalmem(),
    gitCommit: gitCommit(),
    redis: {
      source: redisSource,
      version: infoField(server, 'redis_version'),
      mode: infoField(server, 'redis_mode'),
      allocator: infoField(memory, 'mem_allocator'),
      os: infoField(server, 'os'),
    },
  };
}
