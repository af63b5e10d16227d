/** Two declarations share a throttle name but not its key: one name identifies one set of buckets. */
export class ThrottleConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
