import type { IncomingMessage } from 'node:http';
import { DashboardRequestError } from '../../errors/DashboardRequestError';
import { InvalidOptionError } from '../../errors/InvalidOptionError';

const MAX_BODY_BYTES = 64 * 1024;

/**
 * The JSON body of a write. Only `application/json` is taken: a browser sends that type across sites only
 * after a CORS preflight, which the dashboard never answers, so another site's form cannot make the page's
 * writes. A body an app's own parser already read (Express's express.json(), Fastify's, put on `req.body`) is
 * taken from there, since the stream is then spent.
 */
export async function readJsonBody(req: IncomingMessage & { body?: unknown }): Promise<unknown> {
  const type = String(req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') {
    throw new DashboardRequestError(415, `the dashboard's writes take a JSON body: send content-type application/json, not '${type || 'none'}'.`);
  }
  if (req.body !== undefined && (req.readableEnded || typeof req.body === 'object')) {
    return typeof req.body === 'string' || Buffer.isBuffer(req.body) ? parse(String(req.body)) : req.body;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new DashboardRequestError(413, `the request body is over ${MAX_BODY_BYTES} bytes: a dashboard write is a small JSON object.`);
    chunks.push(chunk as Buffer);
  }
  return parse(Buffer.concat(chunks).toString('utf8'));
}

function parse(text: string): unknown {
  try {
    return text.trim() === '' ? {} : JSON.parse(text);
  } catch (error) {
    throw new InvalidOptionError(`the request body is not valid JSON (${(error as Error).message}): send an object such as {"throttle":"stripe"}.`);
  }
}
