import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GrantorInternals } from '../../src/grant/Grantor';
import { loadLuaScripts, LuaScript } from '../../src/lua/scripts';

let steerableScripts: Map<string, LuaScript> | undefined;

/** The package's scripts with the Redis clock shifted by an offset the test controls. */
export function steerableLuaScripts(): Map<string, LuaScript> {
  steerableScripts ??= loadLuaScripts({
    overrides: { 'includes/nowUs': readFileSync(join(__dirname, '..', 'lua', 'testNowUs.lua'), 'utf8') },
  });
  return steerableScripts;
}

/** Moves the throttle scripts' clock forward; it never goes back, as a real clock would not. */
export class TestClock {
  private offsetMs = 0;

  advance(ms: number): void {
    if (ms < 0) throw new Error('TestClock only moves forward');
    this.offsetMs += ms;
  }

  internals(): GrantorInternals {
    return { scripts: steerableLuaScripts(), extraArgs: () => [this.offsetMs] };
  }
}
