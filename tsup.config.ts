import { defineConfig } from 'tsup';

/**
 * The published build: the library as CommonJS (dist/index.js) and as real ESM (dist/index.mjs), each with
 * its declarations (.d.ts / .d.mts), and the CLI as CommonJS (dist/cli/main.js). Each entry is bundled,
 * so only what it imports is shipped: the demo, the dev Redis, the example server and the build check
 * stay out. Packages (dependencies and peers) stay external. No source maps: with their sources inside they
 * were most of the package (1,323 kB packed; 490 kB without), and the bundles are not minified, so a
 * stack trace reads as it is.
 */
const shared = {
  platform: 'node',
  target: 'node20',
  sourcemap: false,
  removeNodeProtocol: false,
  splitting: false,
} as const;

// ESM has no `require`: bundled modules that call it (bullmq/package.json, the optional prom-client) get
// one made for the module. `shims` gives ESM modules __dirname, used to find the package's lua/.
const esmRequire = "import { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(import.meta.url);";

export default defineConfig([
  {
    ...shared,
    entry: { index: 'src/index.ts', 'bull-board': 'src/bullBoard/index.ts' }, // bullmq-throttle/bull-board: @bull-board/api stays out of index
    format: ['cjs', 'esm'],
    dts: true,
    shims: true,
    clean: ['!cli/**', '!dashboard/**'], // dist/cli and dist/dashboard are the other builds', which run at the same time
    banner: ({ format }) => (format === 'esm' ? { js: esmRequire } : undefined),
  },
  {
    ...shared,
    entry: { main: 'src/cli/main.ts' },
    outDir: 'dist/cli',
    format: ['cjs'],
    // ESM only, so a CommonJS require() of them fails before Node 20.19: bundled (with their own dependencies) instead.
    noExternal: ['log-update', 'cli-truncate'],
    clean: true,
  },
  {
    // The dashboard's page (served by createDashboardHandler): one script with uPlot inside, its CSS, index.html.
    entry: { app: 'src/dashboard/web/app.ts' },
    outDir: 'dist/dashboard',
    platform: 'browser',
    target: 'es2020',
    format: ['iife'],
    outExtension: () => ({ js: '.js' }),
    noExternal: ['uplot'],
    publicDir: 'src/dashboard/web/public',
    tsconfig: 'src/dashboard/web/tsconfig.json',
    minify: true,
    clean: true,
  },
]);
