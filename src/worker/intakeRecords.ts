import { IntakeRecord } from './jobClassifier';

/** intakeJobs and reclaimStaleJobs reply { nowUs, n, id, name, data, opts, priority, attributes, ... }. */
export function intakeRecords(reply: unknown[]): IntakeRecord[] {
  const records: IntakeRecord[] = [];
  const count = Number(reply[1]);
  const text = (value: unknown) => (value === null || value === undefined ? null : String(value));
  for (let i = 0; i < count; i++) {
    const at = 2 + 6 * i;
    records.push({
      id: String(reply[at]), name: text(reply[at + 1]), data: text(reply[at + 2]), opts: text(reply[at + 3]),
      priority: text(reply[at + 4]), storedAttributes: text(reply[at + 5]),
    });
  }
  return records;
}
