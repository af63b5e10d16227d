import calculateSlot from 'cluster-key-slot';
import { QueueThrottleKeys, ThrottleKeys } from '../keys/ThrottleKeys';
import { RedisClient } from '../redis/connection';

/**
 * Exact where it can be, leased where it must be: a queue's deliveries are counted in its own delivery
 * script when its keys and its throttles' share a slot (always so on one server without Cluster), and
 * leased from the namespace's grantor otherwise (a Redis Cluster slot of its own, or throttles kept on
 * another Redis through the `grantor` option).
 */
export function deliveryMode(client: RedisClient, hasOwnGrantor: boolean, keys: ThrottleKeys, queueKeys: QueueThrottleKeys): 'exact' | 'leased' {
  if (hasOwnGrantor) return 'leased';
  if (!(client as { isCluster?: boolean }).isCluster) return 'exact';
  return calculateSlot(queueKeys.state) === calculateSlot(keys.registryVersion) ? 'exact' : 'leased';
}
