import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export const ROOT = join(__dirname, '..', '..', '..');

export interface PackedPackage {
  /** Absolute path of the tarball. */
  tarball: string;
  /** Every path in it, relative to the package root (as `npm pack --json` lists them). */
  files: string[];
  /** The tarball's bytes, and the files' bytes unpacked. */
  size: number;
  unpackedSize: number;
}

/** `npm run build`, then `npm pack` into `destination` (its prepack build skipped, having just run): what a user installs. */
export function buildAndPack(destination: string): PackedPackage {
  execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'pipe' });
  const json = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', destination], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const [report] = JSON.parse(json) as { filename: string; files: { path: string }[]; size: number; unpackedSize: number }[];
  return { tarball: join(destination, report.filename), files: report.files.map((f) => f.path), size: report.size, unpackedSize: report.unpackedSize };
}

/** The exact version of a package installed in this repository, so that a consumer installs the same (from npm's cache). */
export function installedVersion(name: string): string {
  return (require(join(ROOT, 'node_modules', name, 'package.json')) as { version: string }).version;
}
