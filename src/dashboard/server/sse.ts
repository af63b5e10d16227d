import type { ServerResponse } from 'node:http';

/**
 * The page's event streams: each open one gets every broadcast. A comment line every 15 s keeps proxies
 * from closing a stream that has had nothing to say.
 */
export class EventStreams {
  private readonly streams = new Set<ServerResponse>();
  private readonly keepAlive: NodeJS.Timeout;

  constructor() {
    this.keepAlive = setInterval(() => {
      for (const res of this.streams) res.write(': keep-alive\n\n');
    }, 15_000);
    this.keepAlive.unref();
  }

  get size(): number {
    return this.streams.size;
  }

  open(res: ServerResponse, first?: { event: string; data: unknown }): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      // nginx would otherwise hold the events back until its buffer fills.
      'x-accel-buffering': 'no',
    });
    // Reconnect after 2 s when the stream breaks (the browser's EventSource does so by itself).
    res.write('retry: 2000\n\n');
    if (first) res.write(frame(first.event, first.data));
    this.streams.add(res);
    const forget = () => this.streams.delete(res);
    res.on('close', forget);
    res.on('error', forget);
  }

  broadcast(event: string, data: unknown): void {
    if (this.streams.size === 0) return;
    const text = frame(event, data);
    for (const res of this.streams) res.write(text);
  }

  close(): void {
    clearInterval(this.keepAlive);
    for (const res of this.streams) res.end();
    this.streams.clear();
  }
}

function frame(event: string, data: unknown): string {
  // JSON has no raw newlines, so the whole value fits one data: line.
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
