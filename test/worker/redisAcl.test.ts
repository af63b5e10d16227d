import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import IORedis from 'ioredis';
import { LocalRedisServer, startLocalRedisServer } from '../../src/devRedis/localRedisServer';
import { runAclWorkload } from '../support/aclWorkload';

/** The ACL rule docs/redis.md gives, as written there (the test runs exactly what the page says). */
function documentedAclRule(): string[] {
  const page = readFileSync(join(__dirname, '..', '..', 'docs', 'redis.md'), 'utf8');
  const line = /^ACL SETUSER app .*$/m.exec(page)?.[0];
  if (!line) throw new Error('docs/redis.md has no line starting "ACL SETUSER app"');
  return line.split(/\s+/).slice(2);
}

describe('the Redis ACL docs/redis.md documents', () => {
  let server: LocalRedisServer;
  afterEach(async () => { await server?.stop(); });

  it('is enough for a ThrottledWorker, a Queue, a Grantor, the admin API and the CLI', async () => {
    server = await startLocalRedisServer();
    const admin = new IORedis(server.url);
    try {
      const rule = documentedAclRule().map((part) => part === '>password' ? '>pw' : part === '~bull:*' ? '~aclt:*' : part);
      expect(rule).toContain('~aclt:*');
      await admin.call('ACL', 'SETUSER', ...rule);
      const errors: Error[] = [];
      const { cli } = await runAclWorkload(`redis://app:pw@127.0.0.1:${server.port}`, 'aclt', (error) => errors.push(error));
      expect(errors.map((e) => e.message)).toEqual([]);
      expect(cli.stderr).toBe('');
      expect(cli.code).toBe(0);
      expect(cli.stdout).toContain('queue acl-orders');
      // Nothing was refused but CONFIG GET, which is optional (the eviction check reads INFO instead).
      const log = (await admin.call('ACL', 'LOG')) as unknown[][];
      const refused = log.map((entry) => String(entry[entry.indexOf('object') + 1]));
      expect([...new Set(refused)].filter((command) => command !== 'config|get')).toEqual([]);
    } finally {
      admin.disconnect();
    }
  });
});
