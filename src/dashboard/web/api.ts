import type { WireError } from '../wire';

/** A request the server refused or failed: its status and message, as the server's JSON says them. */
export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

async function answer<T>(response: Response): Promise<T> {
  const body = (await response.json().catch(() => ({ error: `HTTP ${response.status}`, kind: 'Error' }))) as T | WireError;
  if (!response.ok) throw new ApiError(response.status, (body as WireError).error ?? `HTTP ${response.status}`);
  return body as T;
}

/** Paths are relative: the page's <base> is the dashboard's mount path. */
export async function getJson<T>(path: string, params: Record<string, string> = {}): Promise<T> {
  const search = new URLSearchParams(params).toString();
  return answer<T>(await fetch(`api/${path}${search ? `?${search}` : ''}`, { cache: 'no-store' }));
}

export async function postJson<T>(path: string, body: unknown): Promise<T> {
  return answer<T>(await fetch(`api/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }));
}
