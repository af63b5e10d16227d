/** A grant or return request that does not match the throttle it names (wrong key arity, a bad token id). */
export class InvalidGrantError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
