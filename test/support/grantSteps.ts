import fc from 'fast-check';

/** The steps of the grant property tests besides their grants: a return, and moving the test clock. */
export type ClockStep =
  | { kind: 'return'; pick: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'untilRoom'; jitterMs: number };

/**
 * Weighted arbitraries of those steps, to go with a test's own grant step in fc.oneof: a return, a move of the
 * clock by up to shortMs or longMs, and the adversarial moment: asking again exactly when (or just around when)
 * the last refusal said room returns.
 */
export function clockSteps<S>(shortMs: number, longMs: number): { weight: number; arbitrary: fc.Arbitrary<S | ClockStep> }[] {
  return [
    { weight: 1, arbitrary: fc.nat().map((pick): ClockStep => ({ kind: 'return', pick })) },
    { weight: 3, arbitrary: fc.oneof(fc.integer({ min: 0, max: shortMs }), fc.integer({ min: 0, max: longMs })).map((ms): ClockStep => ({ kind: 'advance', ms })) },
    { weight: 3, arbitrary: fc.constantFrom(-1, -0.4, -0.05, 0, 0, 0.05, 0.4, 1).map((jitterMs): ClockStep => ({ kind: 'untilRoom', jitterMs })) },
  ];
}

/** Moves the clock as an advance or untilRoom step says (lastRetryAt and lastNowMs: the last refusal's, ms). */
export function moveClock(step: ClockStep, clock: { advance(ms: number): void }, lastRetryAt: number, lastNowMs: number): void {
  if (step.kind === 'advance') clock.advance(step.ms);
  else if (step.kind === 'untilRoom') clock.advance(Math.max(0, lastRetryAt - lastNowMs + step.jitterMs));
}
