import { HeldPlace } from './heldJobs';

/**
 * What joins a held job's name and where it is held: "charge · held by stripe-per-customer[acme]". Plain text, as
 * every font has it: a symbol such as ⏸ comes from an emoji font, which a server's or CI's browser may lack.
 */
export const HELD_SEPARATOR = ' · ';

/**
 * The bucket holding a waiting job, as a person reads it: `stripe-per-customer[acme]`, `stripe` (an unkeyed
 * throttle's one bucket), `stripe[missing key]` (the shared bucket of jobs missing the key), `t[acme, send]`.
 */
export function describeBucket(place: Extract<HeldPlace, { kind: 'waiting' }>): string {
  if (place.segment !== undefined) return `${place.throttle}[${place.segment}]`;
  if (place.key === null) return `${place.throttle}[missing key]`;
  return place.key.length === 0 ? place.throttle : `${place.throttle}[${place.key.map(String).join(', ')}]`;
}

export function heldLabel(place: HeldPlace): string {
  switch (place.kind) {
    case 'waiting': return `held by ${describeBucket(place)}`;
    case 'ready': return 'held, ready to go';
    case 'classifying': return 'held, being classified';
  }
}

/** The name Bull Board shows for a held job. */
export function markedName(name: string, place: HeldPlace): string {
  return name ? `${name}${HELD_SEPARATOR}${heldLabel(place)}` : heldLabel(place);
}

/** The part of a bullmq Job this needs: Bull Board renders `toJSON()` (its formatJob), never `job.name` itself. */
interface Serializable {
  readonly name: string;
  toJSON(): object;
}

/**
 * Marks the job as Bull Board sees it, and only there: its `toJSON()` (what Bull Board serializes and renders)
 * carries the marked name, while `job.name` and the job in Redis stay as they are, so that an action taken on the
 * job from the board (remove, retry) acts on the job as stored. Returns the same job.
 */
export function markHeldJob<J extends Serializable>(job: J, place: HeldPlace): J {
  const plain = job.toJSON.bind(job);
  const name = markedName(job.name, place);
  // Not enumerable: bullmq's toJSON copies the job's own enumerable fields, and must not copy this one.
  Object.defineProperty(job, 'toJSON', { value: () => ({ ...plain(), name }), enumerable: false, configurable: true });
  return job;
}
