import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The folder of this package's package.json: the nearest one above this module. The module sits at a
 * different depth in the source (src/, run by jest through swc and by tsx) than in the bundled build (dist/), so the
 * package's own files (lua/) are found from the package root rather than by a fixed number of `..`.
 */
export function packageRoot(from: string = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`bullmq-throttle: no package.json above ${from}; the package's files (lua/) cannot be found.`);
  }
}
