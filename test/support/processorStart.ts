/**
 * The moment a processor starts, as the tests count the guarantee where the API sees it (issue 26): this process's
 * monotonic clock on the wall clock's scale, so that starts within one process compare exactly whatever the wall
 * clock does, and sit near Redis's TIME and processedOn.
 */
export const nowMs = (): number => performance.timeOrigin + performance.now();
