import { Redis } from 'ioredis';

/**
 * One command to one Redis process on a loopback port, on a connection of its own that is closed after it.
 * A fresh connection each time, because the processes the harness talks to are killed, stopped and restarted
 * under it; a short connect and command timeout, because a SIGSTOPped process accepts the TCP connection
 * (the kernel does) but never answers.
 */
export async function redisCommand(port: number, args: (string | number)[], timeoutMs = 2_000): Promise<unknown> {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableReadyCheck: false,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const [command, ...rest] = args;
    return await client.call(String(command), ...rest.map(String));
  } finally {
    client.disconnect();
  }
}

/** {@link redisCommand}, or undefined when the process does not answer (dead, stopped, refusing). */
export async function tryRedisCommand(port: number, args: (string | number)[], timeoutMs = 1_000): Promise<unknown> {
  try {
    return await redisCommand(port, args, timeoutMs);
  } catch {
    return undefined;
  }
}

/** `INFO` / `CLUSTER INFO` text as a map of field to value. */
export function parseInfo(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  return fields;
}

export async function infoOf(port: number, section: string, timeoutMs?: number): Promise<Map<string, string>> {
  return parseInfo(String(await redisCommand(port, ['INFO', section], timeoutMs)));
}

/** Sentinel replies (`SENTINEL MASTER`, `SENTINEL REPLICAS` entries) are flat [field, value, ...] arrays. */
export function fieldsOf(flat: unknown): Map<string, string> {
  const fields = new Map<string, string>();
  const list = Array.isArray(flat) ? flat : [];
  for (let i = 0; i + 1 < list.length; i += 2) fields.set(String(list[i]), String(list[i + 1]));
  return fields;
}
