import { execFileSync } from 'node:child_process';

/** Where `redis-server` / `redis-cli` are, or an error saying how to install them (Debian's redis-server package). */
export function redisBinary(name: 'redis-server' | 'redis-cli'): string {
  let found = '';
  try {
    found = execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
  } catch {
    // not on PATH: reported below
  }
  if (!found) {
    throw new Error(`${name} is not on PATH: the cluster and sentinel tests start their own Redis processes. ` +
      'Install it (Debian: apt-get install redis-server, which brings redis-cli through redis-tools).');
  }
  return found;
}
