/**
 * The URL this test file uses. The jest global setup starts one Redis per jest worker (a space-separated list in
 * BULLMQ_THROTTLE_TEST_REDIS_URLS), so that files running side by side never share a server: a test that fills
 * Redis, blocks it or counts its commands sees only its own file's traffic. Child processes a test starts inherit
 * JEST_WORKER_ID and so talk to the same server as their test.
 */
export function testRedisUrl(): string {
  const urls = (process.env.BULLMQ_THROTTLE_TEST_REDIS_URLS ?? '').split(' ').filter(Boolean);
  if (urls.length === 0) throw new Error('BULLMQ_THROTTLE_TEST_REDIS_URLS is unset: run the tests through `npm test` (jest globalSetup).');
  const worker = Number(process.env.JEST_WORKER_ID ?? '1');
  return urls[(worker - 1) % urls.length];
}
