import { ConnectionInput } from '../redis/connection';

/**
 * Where a ThrottleAdmin reads: the queues' Redis, their bullmq prefix, and the workers' throttle namespace.
 *
 * @example
 * const admin = new ThrottleAdmin({ connection: 'redis://127.0.0.1:6379', prefix: 'bull' });
 */
export interface ThrottleAdminOptions {
  /**
   * ioredis options, a redis:// URL, a Cluster's seeds (`{ startupNodes }`), or an ioredis Redis or Cluster
   * client (which the admin then never closes).
   */
  connection: ConnectionInput;
  /**
   * bullmq's key prefix of the queues asked about.
   * @default 'bull'
   */
  prefix?: string;
  /**
   * The throttle namespace: the workers' `throttlePrefix`.
   * @default prefix
   */
  throttlePrefix?: string;
  /**
   * Where the workers' throttles are counted when they give ThrottledWorker a `grantor` (another Redis): the
   * registry, counters and bucket indexes are read there, each queue's own keys on `connection`.
   * @default the connection
   */
  grantor?: {
    /**
     * The grantor's Redis, in any form `connection` takes: ioredis options, a redis:// URL, a Cluster's seeds, or an
     * ioredis Redis or Cluster client (which the admin then never closes).
     */
    connection: ConnectionInput;
  };
}
