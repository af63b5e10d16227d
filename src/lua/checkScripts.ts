import { loadLuaScripts } from './scripts';

// Run by `npm run build`: fails the build when a script's includes do not resolve.
const scripts = loadLuaScripts();
process.stdout.write(`bundled ${scripts.size} Lua scripts: ${[...scripts.keys()].join(', ')}\n`);
