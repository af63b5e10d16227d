/** A throttle declaration that cannot be used as written; the message names the option, the value and the fix. */
export class InvalidThrottleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
