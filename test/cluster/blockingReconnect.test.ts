import { Cluster } from 'ioredis';
import { settleOnReady } from '../../src/bullmq/settleOnReady';
import { useRedisCluster } from '../support/clusterSuite';
import { newClusterClient } from '../support/clusterClient';
import { done, notYet, waitUntil } from '../support/waitUntil';

// bullmq 6 resets a worker's blocking connection when a BZPOPMIN is overdue and awaits the client's connect().
// An ioredis Cluster's connect() begun while the cluster is failing (cluster_state:fail) never settles: its
// ready check fails, it reconnects with a connect() of its own, and that one becomes ready. Made deterministic
// here by taking a master and its replica down together (their slots uncovered until they come back).
const suite = useRedisCluster();

async function clusterState(port: number): Promise<string> {
  const info = String(await suite.cluster.command(port, 'CLUSTER', 'INFO'));
  return /cluster_state:(\w+)/.exec(info)?.[1] ?? 'unknown';
}

test('a reconnect begun while the cluster is failing settles once the client is ready again', async () => {
  const client: Cluster = newClusterClient(suite.cluster.seeds);
  try {
    await waitUntil('client ready', async () => (client.status === 'ready' ? done(true) : notYet(client.status)), { timeoutMs: 20_000 });
    const master = (await suite.cluster.masterOfKey('{blocking}:marker')).port;
    const replica = (await suite.cluster.replicaOf(master)).port;
    const witness = suite.cluster.ports.find((port) => port !== master && port !== replica)!;
    await suite.cluster.kill(replica, 'SIGKILL');
    await suite.cluster.kill(master, 'SIGKILL');
    await waitUntil('cluster_state:fail', async () => ((await clusterState(witness)) === 'fail' ? done(true) : notYet('still ok')), { timeoutMs: 30_000 });

    client.disconnect();
    let plainSettled = false;
    const plainConnect = client.connect();
    plainConnect.then(() => { plainSettled = true; }, () => { plainSettled = true; });
    const wrapped = settleOnReady(() => plainConnect, () => client)();
    let wrappedSettled = false;
    wrapped.then(() => { wrappedSettled = true; }, () => { wrappedSettled = true; });

    await suite.cluster.restart(master, { waitForStable: false });
    await suite.cluster.restart(replica);
    await waitUntil('the wrapped reconnect to settle', async () => (wrappedSettled ? done(true) : notYet(`client ${client.status}`)), { timeoutMs: 60_000 });
    await expect(wrapped).resolves.toBeUndefined();
    expect(client.status).toBe('ready');
    expect(await client.set('{blocking}:marker', '1')).toBe('OK');
    // What the wrapper is for (ioredis 6.0.0): the connect() it wraps has not settled, though the client is ready.
    process.stderr.write(`ioredis Cluster.connect() begun during cluster_state:fail settled by the time the client was ready: ${plainSettled}\n`);
  } finally {
    client.disconnect();
  }
}, 150_000);
