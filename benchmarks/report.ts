import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MachineInfo } from './machine';
import type { BenchmarkResult, Cell, Column } from './types';

export const RESULTS_DIR = join(__dirname, 'results');

/** What benchmarks/results/<name>.json holds. */
export interface ResultFile extends BenchmarkResult {
  name: string;
  description: string;
  machine: MachineInfo;
  startedAt: string;
  runMs: number;
}

function formatCell(value: Cell | undefined, column: Column): string {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return String(value);
    const digits = Number.isInteger(value) ? 0 : column.digits ?? 2;
    return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  }
  return value;
}

/** The result as a plain-text table: numbers right-aligned, text left-aligned, notes underneath. */
export function formatTable(result: BenchmarkResult): string {
  const { columns, rows } = result;
  const cells = rows.map((row) => columns.map((column) => formatCell(row[column.key], column)));
  const numeric = columns.map((column) => rows.some((row) => typeof row[column.key] === 'number'));
  const widths = columns.map((column, i) => Math.max(column.label.length, ...cells.map((line) => line[i].length)));
  const pad = (text: string, i: number): string => (numeric[i] ? text.padStart(widths[i]) : text.padEnd(widths[i]));
  const lines = [
    result.title,
    '',
    columns.map((column, i) => pad(column.label, i)).join('  ').trimEnd(),
    widths.map((width) => '-'.repeat(width)).join('  '),
    ...cells.map((line) => line.map(pad).join('  ').trimEnd()),
  ];
  if (result.notes?.length) lines.push('', ...result.notes.map((note) => `  * ${note}`));
  return `${lines.join('\n')}\n`;
}

export function writeResultFile(file: ResultFile): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const path = join(RESULTS_DIR, `${file.name}.json`);
  writeFileSync(path, `${JSON.stringify(file, null, 2)}\n`);
  return path;
}

/**
 * latest.json: the newest result of every registered benchmark, read back from its own file,
 * so that a filtered run (`npm run bench -- grant`) refreshes its part and keeps the others.
 */
export function writeLatest(names: readonly string[]): string {
  const results: ResultFile[] = [];
  for (const name of names) {
    const path = join(RESULTS_DIR, `${name}.json`);
    if (existsSync(path)) results.push(JSON.parse(readFileSync(path, 'utf8')) as ResultFile);
  }
  const path = join(RESULTS_DIR, 'latest.json');
  writeFileSync(path, `${JSON.stringify({ writtenAt: new Date().toISOString(), benchmarks: results }, null, 2)}\n`);
  return path;
}
