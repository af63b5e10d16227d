import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { deleteKeysUnder, newRedis, uniquePrefix } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';
import { ConsumerProject, ModuleResolution } from './support/consumerProject';
import { BULL_BOARD_CJS_SCRIPT, BULL_BOARD_ESM_SCRIPT, CJS_SCRIPT, DASHBOARD_CJS_SCRIPT, ESM_SCRIPT, typedConsumer, TypedConsumerOptions } from './support/consumerSources';
import { buildAndPack, installedVersion, PackedPackage, ROOT } from './support/packedPackage';

// Builds, packs and installs into two consumer apps once for the whole file (npm install from npm's cache).
const SETUP_MS = 240_000;
const RESOLUTIONS: ModuleResolution[] = ['node16', 'nodenext', 'bundler'];
const TYPED_FILES = ['consumer.ts', 'consumer.mts'];

const work = mkdtempSync(join(tmpdir(), 'bullmq-throttle-packaging-'));
const prefix = uniquePrefix('packaging');
let packed: PackedPackage;
let withIoredis6: ConsumerProject;
let withIoredis5: ConsumerProject;
// The other supported bullmq lines (.ci/bullmq-lines), for the declarations, each with the ioredis an app uses with
// it: bullmq 5 pins an exact ioredis (an app whose ioredis differs does not compile a plain bullmq Worker either),
// bullmq 6 takes ioredis 5 or 6 as a peer (5 here; the consumers above cover 6).
const OTHER_BULLMQ_LINES: Record<string, string> = { '5.67.0': '5.9.2', '5.81.5': '5.11.1', '6.0.0': '^5' };
let onOtherLines: ConsumerProject[];

function consumer(name: string, dependencies: Record<string, string>, typed: TypedConsumerOptions): Promise<ConsumerProject> {
  const source = typedConsumer(typed);
  return ConsumerProject.create(join(work, name), { 'bullmq-throttle': `file:${packed.tarball}`, ...dependencies }, {
    'consumer.ts': source, // CommonJS under node16/nodenext: resolves the `require` types
    'consumer.mts': source, // ESM: resolves the `import` types
    'check.cjs': CJS_SCRIPT,
    'check.mjs': ESM_SCRIPT,
    'board.cjs': BULL_BOARD_CJS_SCRIPT,
    'board.mjs': BULL_BOARD_ESM_SCRIPT,
    'dashboard.cjs': DASHBOARD_CJS_SCRIPT,
  });
}

beforeAll(async () => {
  packed = buildAndPack(work);
  const shared = { bullmq: installedVersion('bullmq'), '@types/node': installedVersion('@types/node') };
  [withIoredis6, withIoredis5] = await Promise.all([
    consumer('ioredis6', {
      ...shared, ioredis: installedVersion('ioredis'), ioredis5: 'npm:ioredis@^5', 'prom-client': installedVersion('prom-client'), '@bull-board/api': installedVersion('@bull-board/api'),
    }, { promClient: true, otherIoredis: 'ioredis5' }),
    consumer('ioredis5', { ...shared, ioredis: '^5' }, { promClient: false }),
  ]);
  onOtherLines = await Promise.all(Object.entries(OTHER_BULLMQ_LINES).map(([bullmq, ioredis]) => consumer(`bullmq-${bullmq}`, { bullmq, ioredis, '@types/node': shared['@types/node'] }, { promClient: false })));
}, SETUP_MS);

afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  const redis = newRedis();
  await deleteKeysUnder(redis, prefix);
  await redis.quit();
});

describe('npm pack', () => {
  it('holds both builds with their types, the CLI, every Lua script and include, README, LICENSE and CHANGELOG', () => {
    const lua = readdirSync(join(ROOT, 'lua')).filter((f) => f.endsWith('.lua')).map((f) => `lua/${f}`);
    // Includes, with each bullmq line's own (lua/includes/bullmq5/, bullmq6/).
    const includes = (readdirSync(join(ROOT, 'lua', 'includes'), { recursive: true }) as string[])
      .filter((f) => f.endsWith('.lua')).map((f) => `lua/includes/${f.split('\\').join('/')}`);
    expect(lua.length).toBeGreaterThan(0);
    expect(includes.length).toBeGreaterThan(0);
    const expected = [
      'package.json', 'README.md', 'LICENSE', 'CHANGELOG.md',
      'dist/index.js', 'dist/index.d.ts', 'dist/index.mjs', 'dist/index.d.mts', 'dist/cli/main.js',
      'dist/bull-board.js', 'dist/bull-board.d.ts', 'dist/bull-board.mjs', 'dist/bull-board.d.mts',
      'dist/dashboard/index.html', 'dist/dashboard/app.js', 'dist/dashboard/app.css',
      ...lua, ...includes,
    ];
    expect(packed.files).toEqual(expect.arrayContaining(expected));
  });

  it('holds no demo, dev Redis, example server, build check, tests, benchmarks or TypeScript sources', () => {
    const unwanted = packed.files.filter((f) =>
      /demo|devRedis|exampleServer|checkScripts|^test\/|^benchmarks\/|^src\/|^docs\//i.test(f) || (f.endsWith('.ts') && !/\.d\.m?ts$/.test(f)));
    expect(unwanted).toEqual([]);
    // Only the builds and their declarations, the dashboard's page, the Lua and the top-level documents.
    expect(packed.files.filter((f) => !/^(dist\/.*\.(js|mjs|d\.ts|d\.mts)|dist\/dashboard\/(index\.html|app\.css)|lua\/.*\.lua|package\.json|README\.md|LICENSE|CHANGELOG\.md)$/.test(f))).toEqual([]);
  });

  it('is lean: no source maps (with their sources they were over half of it), under 625 kB packed', () => {
    expect(packed.files.filter((f) => f.endsWith('.map'))).toEqual([]);
    for (const file of packed.files.filter((f) => /\.(m?js)$/.test(f))) {
      expect({ file, mapLink: /\/\/# sourceMappingURL=/.test(readFileSync(join(ROOT, file), 'utf8')) }).toEqual({ file, mapLink: false });
    }
    // With the maps: 1,323 kB packed, 4,847 kB unpacked; without: 490 kB and 1,703 kB (measured when they went).
    // 549 kB once issue 29 had moved code into the queue state and the gate; 556 kB with the delivery script split
    // into includes, each with its header (freshJobs, placeJobs, readyJobs, slotTokens, wakeDueBuckets, windowKind).
    // 571 kB before issue 30; 584 kB with adaptive limits, 608 kB with deadlines and fair shares too, 614 kB with
    // the fair shares' figures in stats: the library's code is in five builds (index, its ESM twin, the CLI, Bull
    // Board's two).
    console.log(`npm pack: ${Math.round(packed.size / 1000)} kB packed, ${Math.round(packed.unpackedSize / 1000)} kB unpacked, ${packed.files.length} files`);
    expect(packed.size).toBeLessThan(625_000);
  });

  it('declares bullmq and ioredis as peers, Node 20 or later, an MIT LICENSE, and where the project lives', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, Record<string, string> | string | undefined>;
    const deps = (pkg.dependencies ?? {}) as Record<string, string>;
    const peers = pkg.peerDependencies as Record<string, string>;
    expect(deps.ioredis).toBeUndefined();
    expect(deps.bullmq).toBeUndefined();
    expect(peers.ioredis).toBe('^5.0.0 || ^6.0.0');
    expect(peers.bullmq).toBeDefined();
    expect(pkg.engines).toEqual({ node: '>=20' });
    expect(pkg.license).toBe('MIT');
    expect(readFileSync(join(ROOT, 'LICENSE'), 'utf8')).toMatch(/^MIT License\n\nCopyright \(c\) \d{4} bullmq-throttle contributors\n/);
    expect(readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8')).toMatch(/## \[Unreleased\][\s\S]*## \[0\.1\.0\]/);
    expect(pkg.repository).toEqual({ type: 'git', url: expect.stringMatching(/^git\+https:\/\/github\.com\/.+\.git$/) });
    expect(pkg.bugs).toEqual({ url: expect.stringMatching(/^https:\/\/github\.com\/.+\/issues$/) });
    expect(pkg.homepage).toMatch(/^https:\/\/github\.com\//);
  });
});

interface ScriptReport {
  resolved: string;
  ioredis?: string;
  exportsEsm?: boolean;
  granted: boolean[];
  result?: number;
}

async function runScript(project: ConsumerProject, script: string): Promise<ScriptReport> {
  // Each run its own prefix: every script grants from a fresh one-per-10s bucket.
  const run = await project.node([script, testRedisUrl(), `${prefix}-${basename(project.dir)}-${script}`]);
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(run.stdout.trim().split('\n').pop()!) as ScriptReport;
}

describe.each([
  ['ioredis 6 (and a second ioredis 5 copy) and prom-client', () => withIoredis6, '6'],
  ['ioredis 5 and no prom-client', () => withIoredis5, '5'],
])('a consumer project with %s', (_name, project, ioredisMajor) => {
  it.each(RESOLUTIONS)('compiles, its own ioredis clients passed as connection, under moduleResolution %s with skipLibCheck off', async (resolution) => {
    const result = await project().typecheck(resolution, TYPED_FILES);
    expect({ code: result.code, output: `${result.stdout}${result.stderr}` }).toEqual({ code: 0, output: '' });
  });

  it("require('bullmq-throttle') gets the CommonJS build, which grants against Redis", async () => {
    const report = await runScript(project(), 'check.cjs');
    expect(report.resolved).toMatch(/node_modules\/bullmq-throttle\/dist\/index\.js$/);
    expect(report.ioredis?.split('.')[0]).toBe(ioredisMajor);
    expect(report.granted).toEqual([true, false]);
  });

  it("import from 'bullmq-throttle' gets the ESM build, which grants and runs a job through a ThrottledWorker", async () => {
    const report = await runScript(project(), 'check.mjs');
    expect(report.resolved).toMatch(/node_modules\/bullmq-throttle\/dist\/index\.mjs$/);
    expect(report.exportsEsm).toBe(true);
    expect(report.granted).toEqual([true, false]);
    expect(report.result).toBe(42);
  });
});

describe.each(Object.entries(OTHER_BULLMQ_LINES).map(([bullmq, ioredis], i) => [bullmq, ioredis, i] as const))('a consumer project on bullmq %s with ioredis %s', (_bullmq, _ioredis, i) => {
  it.each(RESOLUTIONS)('compiles under moduleResolution %s with skipLibCheck off (the declarations hold on every supported line)', async (resolution) => {
    const result = await onOtherLines[i].typecheck(resolution, TYPED_FILES);
    expect({ code: result.code, output: `${result.stdout}${result.stderr}` }).toEqual({ code: 0, output: '' });
  });
});

describe('the dashboard from the packed install', () => {
  it('serves its built page, script and data from dist/dashboard (no esbuild in an install)', async () => {
    const report = await runScript(withIoredis6, 'dashboard.cjs') as unknown as { resolved: string; answers: Record<string, { status: number; type: string; bytes: number }> };
    expect(report.resolved).toMatch(/node_modules\/bullmq-throttle\/dist\/index\.js$/);
    expect(existsSync(join(withIoredis6.dir, 'node_modules', 'esbuild'))).toBe(false);
    expect(report.answers.page).toMatchObject({ status: 200, type: expect.stringMatching(/^text\/html/) });
    expect(report.answers['app.js']).toMatchObject({ status: 200, type: expect.stringMatching(/javascript/) });
    expect(report.answers['app.js'].bytes).toBeGreaterThan(10_000);
    expect(report.answers['api/overview']).toMatchObject({ status: 200, type: expect.stringMatching(/^application\/json/) });
  });
});

describe('bullmq-throttle/bull-board from the packed install', () => {
  it.each(['board.cjs', 'board.mjs'])('%s loads the entry point beside an installed @bull-board/api, and counts from Redis', async (script) => {
    const report = await runScript(withIoredis6, script) as unknown as { resolved: string; waiting: number };
    expect(report.resolved).toMatch(script === 'board.cjs' ? /bullmq-throttle\/dist\/bull-board\.js$/ : /bullmq-throttle\/dist\/bull-board\.mjs$/);
    expect(report.waiting).toBe(1);
  });

  it('stays out of the main entry: an app without @bull-board/api loads bullmq-throttle (the ioredis 5 consumer above)', () => {
    expect(existsSync(join(withIoredis5.dir, 'node_modules', '@bull-board'))).toBe(false);
    for (const main of ['dist/index.js', 'dist/index.mjs']) expect(readFileSync(join(ROOT, main), 'utf8')).not.toContain('@bull-board');
  });
});

describe('the CLI from the packed install', () => {
  it('npx bullmq-throttle --help and --version work', async () => {
    const help = await withIoredis6.npx(['bullmq-throttle', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: bullmq-throttle /);
    const version = await withIoredis6.npx(['bullmq-throttle', '--version']);
    expect(version.stdout.trim()).toBe(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
  });
});
