/** Held jobs were to be released while a live ThrottledWorker still declares throttles on their queue. */
export class QueueStillThrottledError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
