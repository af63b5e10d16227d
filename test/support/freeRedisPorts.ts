import { createServer } from 'node:net';

/**
 * Free loopback ports for Redis processes started by the tests.
 *
 * Candidates are drawn from 10000-16383 so that a cluster node's bus port (port + 10000, 20000-26383) is never
 * another node's port and stays below the kernel's ephemeral range (32768 and up here), where outgoing
 * connections could take it at any moment.
 * Each port is probed by binding it (and its bus port, when asked) on 127.0.0.1; ports handed out by this
 * process are never handed out twice, so that the nodes of one cluster, or two clusters, do not collide.
 *
 * Test files run side by side in jest workers: each worker draws from a slice of the range of its own
 * (JEST_WORKER_ID), so that no other worker takes a port between its probe and the start, or while a test has
 * killed a node it is about to restart on the same port.
 */
const RANGE_LOWEST = 10_000;
const RANGE_HIGHEST = 16_383;
const SLICES = 8;
const SLICE = Math.floor((RANGE_HIGHEST - RANGE_LOWEST + 1) / SLICES);
const slice = (Number(process.env.JEST_WORKER_ID ?? '1') - 1) % SLICES;
const LOWEST = RANGE_LOWEST + slice * SLICE;
const HIGHEST = LOWEST + SLICE - 1;
const BUS_OFFSET = 10_000;
const handedOut = new Set<number>();

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)));
  });
}

export async function freeRedisPort(options: { withBusPort: boolean }): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = LOWEST + Math.floor(Math.random() * (HIGHEST - LOWEST + 1));
    if (handedOut.has(port) || (options.withBusPort && handedOut.has(port + BUS_OFFSET))) continue;
    if (!(await canBind(port))) continue;
    if (options.withBusPort && !(await canBind(port + BUS_OFFSET))) continue;
    handedOut.add(port);
    if (options.withBusPort) handedOut.add(port + BUS_OFFSET);
    return port;
  }
  throw new Error(`no free loopback port (and bus port + ${BUS_OFFSET}) found in ${LOWEST}-${HIGHEST} after 200 tries`);
}

export async function freeRedisPorts(count: number, options: { withBusPort: boolean }): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < count; i++) ports.push(await freeRedisPort(options));
  return ports;
}
