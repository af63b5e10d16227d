/** The page's views, by the URL's hash: '#/', '#/bucket?throttle=…&key=…', '#/job?queue=…&id=…'. */
export type Route =
  | { view: 'overview' }
  | { view: 'bucket'; throttle: string; keyText: string | null }
  | { view: 'job'; queue: string; id: string };

export function currentRoute(hash: string = location.hash): Route {
  const text = hash.replace(/^#/, '');
  const [path, search = ''] = text.split('?');
  const params = new URLSearchParams(search);
  if (path === '/bucket' && params.get('throttle')) return { view: 'bucket', throttle: params.get('throttle')!, keyText: params.get('key') };
  if (path === '/job') return { view: 'job', queue: params.get('queue') ?? '', id: params.get('id') ?? '' };
  return { view: 'overview' };
}

export function bucketHref(throttle: string, key: unknown): string {
  const params = new URLSearchParams({ throttle });
  if (key !== undefined) params.set('key', JSON.stringify(key));
  return `#/bucket?${params}`;
}

export function jobHref(queue: string, id: string): string {
  return `#/job?${new URLSearchParams({ queue, id })}`;
}
