import { groupSegment } from '../declarations/Fairness';
import type { KeyValue } from '../declarations/Key';
import { InvalidOptionError } from '../errors/InvalidOptionError';
import { AdminContext } from './adminContext';

/** ThrottleAdmin.setFairnessWeight: the group's weight in the queue's fair-weights hash (lua/includes/fairness.lua reads it). */
export async function writeFairnessWeight(admin: AdminContext, queue: string, group: KeyValue | readonly KeyValue[], weight: number | null): Promise<void> {
  const values = Array.isArray(group) ? [...(group as readonly KeyValue[])] : [group as KeyValue];
  let segment: string;
  try {
    segment = groupSegment(values, queue);
  } catch (error) {
    throw new InvalidOptionError(`setFairnessWeight('${queue}', ${JSON.stringify(group)}): ${(error as Error).message}`);
  }
  const key = admin.keys.queue(queue).fairWeights;
  if (weight === null) {
    await admin.connections.client.hdel(key, segment);
    return;
  }
  if (typeof weight !== 'number' || !Number.isFinite(weight) || weight <= 0) {
    throw new InvalidOptionError(`setFairnessWeight('${queue}', ${JSON.stringify(group)}, ${String(weight)}): the weight must be a positive number, such as 2, or null to go back to the declared one.`);
  }
  await admin.connections.client.hset(key, segment, String(weight));
}
