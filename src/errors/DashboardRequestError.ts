/**
 * A dashboard request refused for what it is rather than for its values (those are InvalidOptionError, 400):
 * a write while writes are off (403), an unknown path (404), a wrong method (405), a body too large (413) or
 * not JSON (415). `status` is the HTTP status it is answered with.
 */
export class DashboardRequestError extends Error {
  constructor(
    /** The HTTP status the dashboard answers with: 403, 404, 405, 413 or 415. */
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}
