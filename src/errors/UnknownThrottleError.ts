/** Stats were asked of a throttle that no live worker declares under this prefix. */
export class UnknownThrottleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
