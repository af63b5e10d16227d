import { ThrottleKeys } from '../keys/ThrottleKeys';
import { AdminConnections } from './adminConnections';
import { LiveRegistry } from './liveRegistry';

/** What ThrottleAdmin's reads and controls share: its key names, its connections, and the registry read through them. */
export interface AdminContext {
  readonly keys: ThrottleKeys;
  readonly connections: AdminConnections;
  readonly registry: LiveRegistry;
}
