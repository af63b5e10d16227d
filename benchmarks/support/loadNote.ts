import { cpus, loadavg } from 'node:os';

/** "load average 1.23 on 2 CPUs": worth recording next to timings on a machine others may be using. */
export function loadNote(): string {
  return `load average ${loadavg()[0].toFixed(2)} (1 min) on ${cpus().length} CPUs`;
}
