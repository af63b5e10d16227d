/** An option of ThrottledWorker, Grantor or ThrottleAdmin that cannot work as given; the message names the option, the value and the fix. */
export class InvalidOptionError extends TypeError {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
