import type { Redis } from 'ioredis';

/** A table column: `key` names the row field, `label` heads the column. */
export interface Column {
  readonly key: string;
  readonly label: string;
  /** Decimal places for non-integer numbers (default 2). */
  readonly digits?: number;
}

export type Cell = string | number | boolean | null;
export type Row = Record<string, Cell>;

/** What a benchmark hands back: one table, plus free-form notes printed under it. */
export interface BenchmarkResult {
  readonly title: string;
  readonly columns: readonly Column[];
  readonly rows: readonly Row[];
  readonly notes?: readonly string[];
}

export interface BenchmarkContext {
  /** The Redis to benchmark against (REDIS_URL, or a redis-server started by run.ts). */
  readonly redisUrl: string;
  /** An admin connection shared by the run: INFO, MEMORY USAGE, cleanup. Benchmarks must not close it. */
  readonly redis: Redis;
  /** Every key a benchmark writes starts with this; run.ts deletes them all afterwards. */
  readonly prefix: string;
  /** How long each timed case runs (BENCH_DURATION_MS, default 3000). */
  readonly durationMs: number;
  /** Progress messages: to stderr, so that stdout holds only the tables. */
  log(message: string): void;
}

export interface Benchmark {
  /** Names the results file and is what the command-line filter matches. */
  readonly name: string;
  readonly description: string;
  run(context: BenchmarkContext): Promise<BenchmarkResult>;
}
