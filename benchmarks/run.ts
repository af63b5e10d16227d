/**
 * `npm run bench [-- filter ...]`: runs every registered benchmark (or those whose name contains a filter),
 * prints one table each and writes benchmarks/results/<name>.json and latest.json.
 */
import IORedis from 'ioredis';
import { machineInfo } from './machine';
import { benchmarks } from './registry';
import { formatTable, writeLatest, writeResultFile } from './report';
import { openBenchRedis } from './support/benchRedis';
import { deleteKeysUnder } from './support/keys';
import type { Benchmark } from './types';

function selected(filters: readonly string[]): Benchmark[] {
  if (filters.length === 0) return [...benchmarks];
  const wanted = filters.map((filter) => filter.toLowerCase());
  return benchmarks.filter((bench) => wanted.some((filter) => bench.name.toLowerCase().includes(filter)));
}

function durationMs(): number {
  const value = Number(process.env.BENCH_DURATION_MS ?? 3000);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`BENCH_DURATION_MS=${process.env.BENCH_DURATION_MS} is not a positive number of ms.`);
  return value;
}

async function main(): Promise<void> {
  const filters = process.argv.slice(2);
  const chosen = selected(filters);
  if (chosen.length === 0) {
    process.stderr.write(`No benchmark matches ${filters.join(' ')}; known: ${benchmarks.map((b) => b.name).join(', ')}\n`);
    process.exitCode = 2;
    return;
  }
  const log = (message: string): void => { process.stderr.write(`[bench] ${message}\n`); };
  const server = await openBenchRedis();
  const redis = new IORedis(server.url, { maxRetriesPerRequest: null });
  try {
    const machine = await machineInfo(redis, server.source);
    log(`Redis ${machine.redis.version} (${server.source}), node ${machine.node}, ${machine.cpuCount} CPUs`);
    for (const bench of chosen) {
      const prefix = `bench-${bench.name}-${Date.now()}`;
      const startedAt = new Date();
      log(`${bench.name}: ${bench.description}`);
      try {
        const result = await bench.run({ redisUrl: server.url, redis, prefix, durationMs: durationMs(), log });
        process.stdout.write(`\n${formatTable(result)}`);
        const path = writeResultFile({
          name: bench.name, description: bench.description, machine, startedAt: startedAt.toISOString(),
          runMs: Date.now() - startedAt.getTime(), ...result,
        });
        log(`wrote ${path}`);
      } catch (error) {
        process.exitCode = 1;
        log(`${bench.name} failed: ${(error as Error).stack ?? String(error)}`);
      } finally {
        await deleteKeysUnder(redis, prefix);
      }
    }
    log(`wrote ${writeLatest(benchmarks.map((bench) => bench.name))}`);
  } finally {
    await redis.quit().catch(() => redis.disconnect());
    await server.stop();
  }
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
