import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { newRedis } from './support/redis';
import { testRedisUrl } from './support/testRedis';

const ROOT = join(__dirname, '..');
const run = promisify(execFile);

/** The README's complete program: the TypeScript block under "## A complete program", as a user pastes it. */
function readmeProgram(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## A complete program'));
  const block = /```ts\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('README.md has no ```ts block under "## A complete program"');
  return block[1];
}

// Issue 28's proof: the README's program runs as pasted (only 'bullmq-throttle' points at this checkout's
// sources) against a private Redis, exits 0 and prints that the limits held.
describe("the README's complete program", () => {
  it('runs as pasted and prints that the limits held', async () => {
    const program = readmeProgram().replace(/from 'bullmq-throttle'/g, `from '${join(ROOT, 'src', 'index')}'`);
    expect(program).toContain(join(ROOT, 'src', 'index'));
    // Beside the sources (gitignored), so that 'bullmq' and 'ioredis' resolve from this checkout's node_modules.
    const dir = join(ROOT, '.scratch');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `readme-program-${process.pid}.ts`);
    writeFileSync(file, program);
    const redis = newRedis();
    try {
      const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, env: { ...process.env, REDIS_URL: testRedisUrl() }, timeout: 40_000 });
      expect(stderr).toBe('');
      expect(stdout).toMatch(/^20 charges over \d+\.\d s: at most [1-5] in any 1 s \(limit 5\), [12] per customer \(limit 2\)\nthe limits held\n$/);
      // It obliterated its queue; what the throttle layer keeps of it expires on its own (docs/keys.md).
      const left = await redis.keys('bull:charges:*');
      expect(left.filter((key) => !key.startsWith('bull:charges::throttle:'))).toEqual([]);
      for (const key of left) expect({ key, expires: (await redis.pttl(key)) > 0 }).toEqual({ key, expires: true });
      if (left.length > 0) await redis.del(...left);
    } finally {
      rmSync(file, { force: true });
      await redis.quit();
    }
  }, 60_000);
});
