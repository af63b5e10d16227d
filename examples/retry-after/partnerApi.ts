// A stand-in for a third-party API (a CRM). Its documentation says: at most 5 requests in any 1 s per API key.
// It counts every request that reaches it with the key, whoever sends it; one over the limit locks the key out
// for 3 s, and every request meanwhile is answered 429 with a Retry-After header (the seconds left, rounded up).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export const DOCUMENTED_LIMIT = { max: 5, windowMs: 1_000 };
const LOCKOUT_MS = 3_000;

/** A request as the API saw it; `caller` is a header this demo sends only to tell its two callers apart. */
export interface ApiCall {
  at: number;
  caller: string;
  status: 200 | 429;
  retryAfterS?: number;
}

export interface PartnerApi {
  url: string;
  calls: ApiCall[];
  close(): Promise<void>;
}

export async function startPartnerApi(): Promise<PartnerApi> {
  const calls: ApiCall[] = [];
  let accepted: number[] = []; // arrival times of the requests it served in the last second
  let lockedUntil = 0;

  const server = http.createServer((req, res) => {
    req.resume(); // the request's body does not matter here
    const at = Date.now();
    const caller = String(req.headers['x-caller'] ?? 'unknown');
    accepted = accepted.filter((t) => t > at - DOCUMENTED_LIMIT.windowMs);
    if (at >= lockedUntil && accepted.length >= DOCUMENTED_LIMIT.max) lockedUntil = at + LOCKOUT_MS;
    if (at < lockedUntil) {
      const retryAfterS = Math.ceil((lockedUntil - at) / 1000);
      calls.push({ at, caller, status: 429, retryAfterS });
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': String(retryAfterS) });
      res.end(JSON.stringify({ error: 'rate limit exceeded' }));
      return;
    }
    accepted.push(at);
    calls.push({ at, caller, status: 200 });
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ synced: true }));
    }, 50); // the API at work
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    async close() {
      server.closeAllConnections(); // fetch keeps connections alive
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
