/**
 * bullmq emits `drained` when a fetch finds no job. A pass (SlotRequests.submit: the main loop told to start the
 * jobs it holds before it fetches again) is not that: the queue may be full of jobs. So the worker does not emit
 * `drained` for one (bullmq emits it on the pass's own turn of the event loop, `passing()`); it still emits it
 * when a fetch finds nothing, as bullmq does. Set on the instance: bullmq lines type `emit` differently.
 */
export function noDrainedOnPasses(worker: object, passing: () => boolean): void {
  const target = worker as { emit(event: string | symbol, ...args: unknown[]): boolean };
  const emit = target.emit.bind(worker);
  target.emit = (event, ...args) => (event === 'drained' && passing() ? false : emit(event, ...args));
}
