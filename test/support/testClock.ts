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
  /** Set: the clock stands still at this time (us) but for advance(). */
  private stoppedUs?: number;

  advance(ms: number): void {
    if (ms < 0) throw new Error('TestClock only moves forward');
    if (this.stoppedUs !== undefined) this.stoppedUs += Math.round(ms * 1000);
    else this.offsetMs += ms;
  }

  /** Stops the clock at `us`, a time the scripts have seen (a reply's nowUs): it moves only by advance() from then. */
  stopAt(us: number): void {
    this.stoppedUs = us;
  }

  internals(): GrantorInternals {
    return { scripts: steerableLuaScripts(), extraArgs: () => [this.stoppedUs === undefined ? this.offsetMs : `@${this.stoppedUs}`] };
  }
}
