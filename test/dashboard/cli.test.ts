import type { WireOverviewWithHistory } from '../../src/dashboard/wire';
import { cli } from '../support/runCli';
import { testRedisUrl } from '../support/testRedis';
import { done, notYet, waitUntil } from '../support/waitUntil';
import { Scenario, startScenario, THROTTLE } from './scenario';

// `bullmq-throttle dashboard`, run as a process: it prints where it listens, serves the page and its data, and
// stops on SIGINT; a Redis it cannot reach is one line and exit 1, as for every command.
describe('bullmq-throttle dashboard', () => {
  let scenario: Scenario | undefined;
  afterEach(async () => {
    await scenario?.close();
    scenario = undefined;
  });

  it('serves the dashboard on the port it prints, read-only by default, until SIGINT', async () => {
    scenario = await startScenario('dash-cli', { acme: 3, beta: 1 });
    let overview: WireOverviewWithHistory | undefined;
    let pauseStatus = 0;
    const run = await cli(['dashboard', '--port', '0', '--redis', testRedisUrl(), '--prefix', scenario.bed.prefix], {
      whileRunning: async (child, out) => {
        try {
          const url = await waitUntil('the URL printed', async () => {
            const match = /dashboard on (http:\/\/127\.0\.0\.1:\d+\/) \(read-only\)/.exec(out());
            return match ? done(match[1]) : notYet(`stdout: '${out()}'`);
          }, { timeoutMs: 30_000 });
          overview = (await (await fetch(`${url}api/overview`)).json()) as WireOverviewWithHistory;
          pauseStatus = (await fetch(`${url}api/pause`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ throttle: THROTTLE }) })).status;
        } finally {
          child.kill('SIGINT');
        }
      },
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(overview!.throttles[0]).toMatchObject({ name: THROTTLE, activeBuckets: 2, bucketsAtLimit: 1, waiting: 1 });
    expect(pauseStatus).toBe(403);
  });

  it('fails with one line when Redis cannot be reached', async () => {
    const run = await cli(['dashboard', '--port', '0', '--redis', 'redis://127.0.0.1:1']);
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toMatch(/^bullmq-throttle: cannot reach Redis at redis:\/\/127\.0\.0\.1:1: /);
    expect(run.stdout).toBe('');
  });
});
