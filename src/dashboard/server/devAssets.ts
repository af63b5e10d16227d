import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { typeOf, type DashboardAssets } from './staticAssets';

/**
 * Bundles the page from src/dashboard/web in memory, as tsup.config.ts's browser build does for dist/dashboard
 * (one IIFE with uPlot inside, its CSS beside it). Only for runs from the TypeScript sources: esbuild is a dev
 * dependency, which a published install does not have.
 */
export async function buildDevAssets(): Promise<DashboardAssets> {
  const webDir = join(__dirname, '..', 'web');
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: { app: join(webDir, 'app.ts') },
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    write: false,
    outdir: join(webDir, 'out'),
    logLevel: 'silent',
  });
  const assets: DashboardAssets = new Map();
  for (const file of result.outputFiles) {
    const name = basename(file.path);
    assets.set(name, { body: Buffer.from(file.contents), type: typeOf(name) });
  }
  assets.set('index.html', { body: readFileSync(join(webDir, 'public', 'index.html')), type: typeOf('index.html') });
  return assets;
}
