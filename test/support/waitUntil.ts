/** What a probe of {@link waitUntil} answers: done with a value, or not yet and why (reported on timeout). */
export type Probe<T> = { done: true; value: T } | { done: false; why: string };

export const done = <T>(value: T): Probe<T> => ({ done: true, value });
export const notYet = (why: string): Probe<never> => ({ done: false, why });

/** Marks an error thrown by a probe as final: {@link waitUntil} rethrows it at once instead of polling on. */
export function giveUp(error: Error): never {
  throw Object.assign(error, { giveUp: true });
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` until it is done; past `timeoutMs` throws with the probe's last reason, so a hang explains itself. */
export async function waitUntil<T>(what: string, probe: () => Promise<Probe<T>>, options: { timeoutMs: number; intervalMs?: number }): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let last = 'never probed';
  for (;;) {
    try {
      const answer = await probe();
      if (answer.done) return answer.value;
      last = answer.why;
    } catch (error) {
      if ((error as { giveUp?: boolean }).giveUp) throw error;
      last = (error as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${what}: ${last}`);
    await sleep(options.intervalMs ?? 100);
  }
}
