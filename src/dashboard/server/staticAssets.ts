import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DashboardAssetsMissingError } from '../../errors/DashboardAssetsMissingError';
import { packageRoot } from '../../packageRoot';

export interface StaticFile {
  body: Buffer;
  type: string;
}

/** The page's files by path under the dashboard: index.html, app.js, app.css (and maps, when built with them). */
export type DashboardAssets = Map<string, StaticFile>;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

export const ASSET_NAMES = ['index.html', 'app.js', 'app.css'] as const;
const OPTIONAL_NAMES = ['app.js.map', 'app.css.map'] as const;

export function typeOf(name: string): string {
  return TYPES[name.slice(name.lastIndexOf('.'))] ?? 'application/octet-stream';
}

/** The built files, as `npm run build` writes them to dist/dashboard. */
function builtAssets(): DashboardAssets {
  const dir = join(packageRoot(__dirname), 'dist', 'dashboard');
  const missing = ASSET_NAMES.filter((name) => !existsSync(join(dir, name)));
  if (missing.length > 0) {
    throw new DashboardAssetsMissingError(`the dashboard's page files ${missing.join(', ')} are missing from ${dir}: run \`npm run build\` (it writes them there), or reinstall the package.`);
  }
  const assets: DashboardAssets = new Map();
  for (const name of [...ASSET_NAMES, ...OPTIONAL_NAMES]) {
    const path = join(dir, name);
    if (existsSync(path)) assets.set(name, { body: readFileSync(path), type: typeOf(name) });
  }
  return assets;
}

let loading: Promise<DashboardAssets> | undefined;

/**
 * The page's files, read once. Run from the TypeScript sources (jest, tsx), the page is bundled from
 * src/dashboard/web on first use, so that tests and `tsx` runs work from a clean clone without `npm run build`
 * and never serve a stale dist/; the built package serves dist/dashboard. The dev bundler is loaded by a
 * computed require, so that the library's bundle neither contains nor needs it.
 */
export function dashboardAssets(): Promise<DashboardAssets> {
  if (!loading) {
    const fromSource = __filename.endsWith('.ts');
    const devModule = './devAssets';
    loading = fromSource
      ? (require(devModule) as typeof import('./devAssets')).buildDevAssets()
      : Promise.resolve().then(builtAssets);
    // A failure is not kept: a build run meanwhile fixes the next request.
    loading.catch(() => { loading = undefined; });
  }
  return loading;
}
