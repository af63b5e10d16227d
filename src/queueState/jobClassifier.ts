import type { Logger } from 'pino';
import { KeyPart, KeyValue } from '../declarations/Key';
import { encodeBucket, encodeSegment } from '../keys/keyEncoding';
import { resolveBuckets } from '../grant/resolveBuckets';
import { QueueConfig } from './queueConfig';
import { EffectiveThrottle } from '../declarations/mergeDeclarations';
import { atPath, jobCost } from './jobCost';
import type { IntakeRecord } from '../lua/calls/intakeJobs';

/** What the attributes function sees of a job: enough to decide, nothing it could change. */
export interface AttributeSource {
  /** The job's id (`job.id`). */
  readonly id: string;
  /** The job's name (`job.name`); '' when the job has none. */
  readonly name: string;
  /** The job's data, parsed from its stored JSON (`job.data`); undefined when the stored data is not JSON. */
  readonly data: unknown;
  /** The job's options as stored (`job.opts`: priority, delay, attempts, ...); {} when they cannot be read. */
  readonly opts: Readonly<Record<string, unknown>>;
}

/** Computes a job's attributes once, when the throttle layer first sees it; they are stored with the job. */
export type AttributesFunction = (job: AttributeSource) => Record<string, unknown> | undefined | null;

/** A job as intake hands it over: its raw fields from the job hash (src/lua/calls/intakeJobs.ts reads them). */
export type { IntakeRecord };

/** Where a job is held: its class member, its order and the attributes to store ('' when already stored). */
export interface Placement {
  readonly id: string;
  readonly member: string;
  readonly priority: number;
  readonly lifo: boolean;
  readonly attributes: string;
  /** Why the job's cost cannot be counted in a throttle (jobCost), if so: it counts 0 there, and fails when delivered. */
  readonly costError?: string;
  /**
   * Its fairness group (the queue's fairness key values' segment, '~' when missing) and that group's declared
   * weight, when the queue has a fairness key (lua/includes/fairness.lua).
   */
  readonly fairness?: { readonly group: string; readonly weight: number };
}

const NO_VALUE = Symbol('no key value');

function parseJson(text: string | null): { ok: true; value: unknown } | { ok: false } {
  if (text === null) return { ok: false };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/** Works out which buckets a job draws from, from its stored data, name and attributes. */
export class JobClassifier {
  constructor(
    private readonly attributesFunction: AttributesFunction | undefined,
    private readonly logger: Logger,
    private readonly queue: string,
  ) {}

  place(record: IntakeRecord, config: QueueConfig): Placement {
    const data = parseJson(record.data);
    if (!data.ok) {
      this.logger.warn({ queue: this.queue, jobId: record.id }, 'job data is not JSON: keys from job.data count as missing');
    }
    const opts = parseJson(record.opts);
    const optsObject = opts.ok && opts.value && typeof opts.value === 'object' ? (opts.value as Record<string, unknown>) : {};
    const { attributes, toStore } = this.attributesOf(record, data.ok ? data.value : undefined, optsObject);

    const valueOf = (part: KeyPart): KeyValue | typeof NO_VALUE => {
      let value: unknown;
      if (part.kind === 'name') value = record.name ?? undefined;
      else if (part.kind === 'data') value = data.ok ? atPath(data.value, part.path) : undefined;
      else if (part.kind === 'attribute') value = attributes[part.name];
      // Key.fairness() is the worker's fairness key by now (ThrottledWorker): one left is missing.
      else value = undefined;
      if (value === undefined || value === null) return NO_VALUE;
      if (typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) return value;
      this.logger.warn(
        { queue: this.queue, jobId: record.id, key: part },
        'key value is not a string, finite number or boolean: the job counts as missing the key',
      );
      return NO_VALUE;
    };

    const delivery = config.throttles.map((throttle) => {
      if (!throttle.keyParts) return { throttle };
      const values = throttle.keyParts.map(valueOf);
      return { throttle, key: values.includes(NO_VALUE) ? null : (values as KeyValue[]) };
    });
    let costError: string | undefined;
    const buckets = resolveBuckets(delivery)
      .map(({ throttle, bucket }) => {
        const id = `${encodeSegment(throttle.name)}=${bucket}`;
        const cost = jobCost(throttle as EffectiveThrottle, data.ok ? data.value : undefined, attributes);
        if ('error' in cost) {
          // Counted 0: it takes no room from the throttle it cannot be counted in, and goes to fail at once.
          costError ??= cost.error;
          return `${id}$0`;
        }
        // A cost other than 1 travels in the class (lua/includes/schedulerKeys.lua parseClass): "<id>$<cost>".
        return cost.cost === 1 ? id : `${id}$${cost.cost}`;
      })
      .sort();
    if (costError) this.logger.warn({ queue: this.queue, jobId: record.id, reason: costError }, 'job cost cannot be counted: it fails when delivered, counting nothing in that throttle');
    let fairness: Placement['fairness'];
    if (config.fairness) {
      const values = config.fairness.key.map(valueOf);
      const group = values.includes(NO_VALUE) ? '~' : encodeBucket(values as KeyValue[], `fairness of '${this.queue}'`);
      fairness = { group, weight: config.fairness.weights[group] ?? 1 };
    }
    return {
      id: record.id,
      member: `${config.gen}/${buckets.length > 0 ? buckets.join('|') : '*'}`,
      priority: Number(record.priority) || 0,
      lifo: optsObject.lifo === true,
      attributes: toStore,
      ...(costError ? { costError } : {}),
      ...(fairness ? { fairness } : {}),
    };
  }

  private attributesOf(record: IntakeRecord, data: unknown, opts: Record<string, unknown>): { attributes: Record<string, unknown>; toStore: string } {
    if (record.storedAttributes !== null) {
      const stored = parseJson(record.storedAttributes);
      return { attributes: stored.ok && stored.value && typeof stored.value === 'object' ? (stored.value as Record<string, unknown>) : {}, toStore: '' };
    }
    if (!this.attributesFunction) return { attributes: {}, toStore: '' };
    let attributes: Record<string, unknown> = {};
    try {
      const computed = this.attributesFunction({ id: record.id, name: record.name ?? '', data, opts });
      if (computed && typeof computed === 'object') attributes = computed;
    } catch (error) {
      this.logger.error(
        { queue: this.queue, jobId: record.id, err: error },
        'attributes function threw: the job is held as missing every attribute key',
      );
    }
    return { attributes, toStore: JSON.stringify(attributes) };
  }
}
