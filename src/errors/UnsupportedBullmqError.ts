/** The installed bullmq is outside the range whose Lua and internals this package builds on. */
export class UnsupportedBullmqError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
