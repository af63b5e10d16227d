/** Stats were asked of a queue that has neither jobs nor throttled workers under this prefix. */
export class UnknownQueueError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
