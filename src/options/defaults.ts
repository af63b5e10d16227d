/** bullmq's own default key prefix: queues and, unless `throttlePrefix` says otherwise, their throttles live under it. */
export const DEFAULT_PREFIX = 'bull';
