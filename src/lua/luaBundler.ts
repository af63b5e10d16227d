import { readFileSync, existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { packageRoot } from '../packageRoot';
import { installedBullmqCommandsDir } from '../bullmq/installedBullmq';
import { defaultLuaVariant } from '../bullmq/selectAdapter';

/**
 * Composes a Lua script from its `--- @include "path"` lines, as bullmq's own loader does:
 * each include is inlined once, where it is first named. Paths are relative to the including file;
 * `bullmq/…` names a file of the installed bullmq's commands, so that our scripts can reuse its Lua
 * (for example `bullmq/includes/prepareJobForProcessing`) rather than copy it. `bullmqLine/…` names our
 * include written for the installed bullmq's line (lua/includes/bullmq5/, lua/includes/bullmq6/), where our
 * Lua must differ between lines (bullmq 5 keeps a paused queue's jobs in a `paused` list, 6 in wait).
 */
export interface BundleOptions {
  /** Replaces an include's source, keyed by its path relative to lua/ without `.lua` (tests steer the clock this way). */
  overrides?: Readonly<Record<string, string>>;
  /** The directory under lua/includes/ that `bullmqLine/…` names (default: the installed bullmq's adapter's). */
  bullmqLine?: string;
}

const INCLUDE = /^[ \t]*-{2,3}[ \t]*@include[ \t]+["']([^"']+)["'][ \t]*;?[ \t]*$/gm;
/**
 * `--- @function "bullmq/moveToFinished-14" moveToFinished`: a whole script made a function of (KEYS, ARGV),
 * so that one script can run another's logic once per item of a batch. Its includes are expanded where the
 * directive stands (once per run, not once per call); the rest of it becomes the function's body, its
 * `return`s the function's.
 */
const FUNCTION = /^[ \t]*-{2,3}[ \t]*@function[ \t]+["']([^"']+)["'][ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*$/gm;

export const LUA_DIR = join(packageRoot(), 'lua');

let bullmqCommandsDir: string | undefined;
function bullmqCommands(): string {
  bullmqCommandsDir ??= installedBullmqCommandsDir();
  return bullmqCommandsDir;
}

function resolveInclude(name: string, fromDir: string, options: BundleOptions): string {
  const withExt = name.endsWith('.lua') ? name : `${name}.lua`;
  if (withExt.startsWith('bullmq/')) return join(bullmqCommands(), withExt.slice('bullmq/'.length));
  if (withExt.startsWith('bullmqLine/')) return join(LUA_DIR, 'includes', options.bullmqLine ?? defaultLuaVariant(), withExt.slice('bullmqLine/'.length));
  return resolve(fromDir, withExt);
}

function overrideKey(file: string): string | undefined {
  if (!file.startsWith(LUA_DIR)) return undefined;
  return file.slice(LUA_DIR.length + 1).replace(/\.lua$/, '');
}

export function bundleLua(file: string, options: BundleOptions = {}): string {
  const included = new Set<string>();
  const expand = (path: string, source: string, chain: string[]): string =>
    source.replace(INCLUDE, (_line, name: string) => {
      const target = resolveInclude(name, dirname(path), options);
      if (chain.includes(target)) throw new Error(`Lua include cycle: ${[...chain, target].join(' -> ')}`);
      if (included.has(target)) return '';
      included.add(target);
      const key = overrideKey(target);
      const override = key === undefined ? undefined : options.overrides?.[key];
      if (override === undefined && !existsSync(target)) {
        throw new Error(`${path} includes "${name}", but ${target} does not exist.`);
      }
      return expand(target, override ?? readFileSync(target, 'utf8'), [...chain, target]);
    });
  const asFunction = (path: string, source: string): string =>
    source.replace(FUNCTION, (_line, name: string, functionName: string) => {
      const target = resolveInclude(name, dirname(path), options);
      if (!existsSync(target)) throw new Error(`${path} makes a function of "${name}", but ${target} does not exist.`);
      const script = readFileSync(target, 'utf8');
      const includes = script.match(INCLUDE) ?? [];
      const body = script.replace(INCLUDE, '');
      return `${expand(target, includes.join('\n'), [file, target])}\nlocal function ${functionName}(KEYS, ARGV)\n${expand(target, body, [file, target])}\nend\n`;
    });
  return expand(file, asFunction(file, readFileSync(file, 'utf8')), [file]);
}
