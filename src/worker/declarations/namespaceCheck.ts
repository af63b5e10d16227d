import type { Logger } from 'pino';
import { ThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../../lua/scripts';
import { runNoteNamespace } from '../../lua/calls/noteNamespace';
import { redisErrorCode } from '../../redis/redisErrorKind';

/**
 * Warns when a throttle this worker declares is declared under another namespace of the same Redis
 * deployment too: each namespace counts it apart, so a limit meant to be shared would be doubled. Each
 * pair is reported once per worker. Users whose ACL keeps them to their own prefix cannot reach the
 * deployment-wide list (ThrottleKeys.namespacesOf): the check is then skipped, once said at debug level.
 */
export class NamespaceCheck {
  private readonly reported = new Set<string>();
  private denied = false;

  constructor(
    private readonly namespace: string,
    private readonly names: readonly string[],
    private readonly ttlMs: number,
    private readonly logger: Logger,
    private readonly who: Record<string, unknown>,
  ) {}

  async check(runner: ScriptRunner): Promise<void> {
    if (this.denied) return;
    for (const name of new Set(this.names)) {
      let others: string[];
      try {
        others = await runNoteNamespace(runner, { namespaces: ThrottleKeys.namespacesOf(name), namespace: this.namespace, ttlMs: this.ttlMs });
      } catch (error) {
        if (redisErrorCode(error) !== 'NOPERM') throw error;
        this.denied = true;
        this.logger.debug({ ...this.who, err: error }, 'cannot check whether throttle names are declared under other namespaces (ACL)');
        return;
      }
      for (const other of others) {
        const pair = `${name}\u0000${other}`;
        if (this.reported.has(pair)) continue;
        this.reported.add(pair);
        this.logger.warn({ ...this.who, throttle: name, namespaces: [this.namespace, other] },
          `throttle '${name}' is declared under two throttle namespaces, '${this.namespace}' and '${other}': each counts it apart, `
          + 'so together they allow twice its limit. Give every worker sharing it the same throttlePrefix.');
      }
    }
  }
}
