import { InvalidOptionError } from '../errors/InvalidOptionError';

/** What Redis Cluster hashes of a key: the first non-empty `{...}`'s content, else the whole key. */
export function hashedPart(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  if (close === -1 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

/**
 * Refuses a throttle namespace whose keys would not share one hash slot: one whose first '{' is closed at once
 * ('{}'), so that Redis Cluster hashes every key whole.
 */
export function assertNamespaceUsable(who: string, option: string, namespace: string, namespaceBase: string): void {
  if (hashedPart(`${namespaceBase}:a`) === hashedPart(`${namespaceBase}:b`)) return;
  throw new InvalidOptionError(
    `${who}: ${option} ${JSON.stringify(namespace)} holds an empty hash tag '{}' before any other, so Redis Cluster would spread its keys over every slot; `
    + `remove the '{}' or put a tag first, e.g. '{${namespace.replace(/[{}]/g, '')}}'.`,
  );
}
