import { existsSync } from 'node:fs';
import { startLocalRedisServer } from '../../src/devRedis/localRedisServer';

/**
 * The one place that decides which Redis servers the tests talk to (globalSetup starts them, testRedisUrl picks one):
 * REDIS_URL when set; else a container when a Docker engine answers; else a redis-server from PATH.
 */
export interface TestRedis {
  url: string;
  source: 'REDIS_URL' | 'testcontainers' | 'redis-server';
  stop(): Promise<void>;
}

function dockerEngineReachable(): boolean {
  if (process.env.DOCKER_HOST) return true;
  return existsSync('/var/run/docker.sock');
}

async function startContainer(): Promise<TestRedis | undefined> {
  try {
    const { GenericContainer, Wait } = await import('testcontainers');
    const container = await new GenericContainer('redis:7')
      .withExposedPorts(6379)
      .withCommand(['redis-server', '--save', '', '--appendonly', 'no'])
      .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
      .start();
    return {
      url: `redis://${container.getHost()}:${container.getMappedPort(6379)}`,
      source: 'testcontainers',
      stop: async () => { await container.stop(); },
    };
  } catch (error) {
    // A socket that exists but does not answer (as on machines with only the docker client) falls through.
    process.stderr.write(`testcontainers unavailable (${(error as Error).message}); falling back to redis-server\n`);
    return undefined;
  }
}

export async function startTestRedis(): Promise<TestRedis> {
  if (process.env.REDIS_URL) {
    return { url: process.env.REDIS_URL, source: 'REDIS_URL', stop: async () => undefined };
  }
  if (dockerEngineReachable()) {
    const container = await startContainer();
    if (container) return container;
  }
  const server = await startLocalRedisServer();
  return { url: server.url, source: 'redis-server', stop: () => server.stop() };
}
