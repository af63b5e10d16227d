import { ThrottleAdmin } from '../admin/ThrottleAdmin';
import { UnknownThrottleError } from '../errors/UnknownThrottleError';

/**
 * Refuses a write command on a throttle no live worker declares: the library accepts it (for workers that
 * declare it later), but from a command line it is most likely a typo that would change nothing and read as done.
 */
export async function requireDeclared(admin: ThrottleAdmin, name: string, action: string): Promise<void> {
  try {
    await admin.requireDeclared(name);
  } catch (error) {
    if (!(error instanceof UnknownThrottleError)) throw error;
    const force = action === 'resume' ? '' : ` To ${action} it anyway, for workers that declare it later, add --force.`;
    throw new UnknownThrottleError(`${error.message}${force}`);
  }
}
