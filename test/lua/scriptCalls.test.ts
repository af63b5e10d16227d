import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import type { ScriptDefinition } from '../../src/lua/calls/scriptCall';

// The typed script layer (src/lua/calls/scriptCall.ts): every script of lua/ has its module, each module's KEYS agree
// with its script's file name, and nothing outside the layer calls a script by its name.

const ROOT = join(__dirname, '..', '..');
const LUA = join(ROOT, 'lua');
const SRC = join(ROOT, 'src');
const CALLS = join(SRC, 'lua', 'calls');
const FILE_NAME = /^([a-zA-Z][a-zA-Z0-9]*)-(\d+|n)\.lua$/;

interface ScriptFile {
  file: string;
  name: string;
  /** The number of keys its file name gives, or 'n'. */
  keys: number | 'n';
}

const scriptFiles: ScriptFile[] = readdirSync(LUA).flatMap((file) => {
  const match = FILE_NAME.exec(file);
  return match ? [{ file, name: match[1], keys: match[2] === 'n' ? 'n' as const : Number(match[2]) }] : [];
});

function isDefinition(value: unknown): value is ScriptDefinition {
  if (!value || typeof value !== 'object') return false;
  const { name, keys } = value as { name?: unknown; keys?: unknown };
  return typeof name === 'string' && (keys === 'n' || (Array.isArray(keys) && keys.every((key) => typeof key === 'string')));
}

/** Every script definition the layer's modules export, with the module that exports it. */
function layerDefinitions(): { module: string; exported: string; definition: ScriptDefinition }[] {
  return readdirSync(CALLS).filter((file) => file.endsWith('.ts')).flatMap((file) => {
    const module = require(join(CALLS, file)) as Record<string, unknown>;
    return Object.entries(module).filter(([, value]) => isDefinition(value))
      .map(([exported, value]) => ({ module: file, exported, definition: value as ScriptDefinition }));
  });
}

function keyCount(definition: ScriptDefinition): number | 'n' {
  return definition.keys === 'n' ? 'n' : definition.keys.length;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|tsx|js|mjs|cjs)$/.test(entry) ? [path] : [];
  });
}

/** `file:line: text` for each line of src (outside `outside`) that matches. */
function linesMatching(pattern: RegExp, outside: string): string[] {
  return sourceFiles(SRC).filter((file) => !file.startsWith(outside + sep)).flatMap((file) =>
    readFileSync(file, 'utf8').split('\n').flatMap((line, i) => (pattern.test(line) ? [`${relative(ROOT, file)}:${i + 1}: ${line.trim()}`] : [])));
}

describe('the typed script layer (src/lua/calls)', () => {
  it('finds the scripts', () => {
    expect(scriptFiles.length).toBeGreaterThan(20);
  });

  it.each(scriptFiles.map((script) => [script.file, script] as const))('%s has its module, exporting its definition', (_file, script) => {
    const file = join(CALLS, `${script.name}.ts`);
    expect(() => statSync(file)).not.toThrow();
    const definition = (require(file) as Record<string, unknown>)[`${script.name}Script`];
    expect(isDefinition(definition)).toBe(true);
    expect((definition as ScriptDefinition).name).toBe(script.name);
  });

  it("gives each module's script the number of keys its file name says ('n': a variable number)", () => {
    const files = new Map(scriptFiles.map((script) => [script.name, script]));
    const disagreements = layerDefinitions().flatMap(({ module, exported, definition }) => {
      const script = files.get(definition.name);
      if (!script) return [`${module}: ${exported} names '${definition.name}', which has no script in lua/`];
      return keyCount(definition) === script.keys ? [] : [`${module}: ${exported} has ${keyCount(definition)} keys, lua/${script.file} ${script.keys}`];
    });
    expect(disagreements).toEqual([]);
  });

  it('names each fixed key once, and defines each script once', () => {
    const definitions = layerDefinitions();
    const repeatedKeys = definitions.filter(({ definition }) => definition.keys !== 'n' && new Set(definition.keys).size !== definition.keys.length);
    expect(repeatedKeys.map(({ module, exported }) => `${module}: ${exported}`)).toEqual([]);
    const byName = new Map<string, string[]>();
    for (const { module, exported, definition } of definitions) byName.set(definition.name, [...(byName.get(definition.name) ?? []), `${module}: ${exported}`]);
    expect([...byName.values()].filter((where) => where.length > 1)).toEqual([]);
  });

  it("leaves no call of a script by its name outside the layer (no .run('<name>'))", () => {
    expect(linesMatching(/\.run\('/, CALLS)).toEqual([]);
  });

  it("leaves no script's name as a string outside src/lua", () => {
    const names = scriptFiles.map((script) => script.name).join('|');
    expect(linesMatching(new RegExp(`['"\`](${names})['"\`]`), join(SRC, 'lua'))).toEqual([]);
  });
});
