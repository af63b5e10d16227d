import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const ROOT = join(__dirname, '..');
const TYPEDOC = join(ROOT, 'node_modules', 'typedoc');

// Issue 28: the API reference is generated from the code (`npm run docs`, TypeDoc), and every exported symbol and
// member is documented: typedoc.json turns an undocumented export, a link that resolves nowhere, or a type the
// reference names but leaves out into an error, so this fails on any of them.
describe('the API reference', () => {
  it('builds with no warning: every export documented', async () => {
    const result = await promisify(execFile)(process.execPath, [join(TYPEDOC, 'bin', 'typedoc'), '--emit', 'none'], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } })
      .then(({ stdout, stderr }) => ({ code: 0, output: `${stdout}${stderr}` }), (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code ?? 1, output: `${error.stdout ?? ''}${error.stderr ?? ''}` }));
    const problems = result.output.split('\n').filter((line) => /\[(warning|error)\]/.test(line));
    expect({ code: result.code, problems }).toEqual({ code: 0, problems: [] });
  }, 120_000);

  // Issue 28, item 2: every option documented, with its default and an example. TypeDoc's own validation knows
  // nothing of `@default` or `@example`, so this reads the reference TypeDoc builds (its JSON model) and asks:
  // - an exported `*Options` interface or type alias has an `@example`;
  // - every optional property of one (an interface's, an object type's, the object types of an intersection,
  //   and the object types nested in them) has a `@default`;
  // - every property of an object type a function or method takes inline (`options: { burst?: number }`) is
  //   documented, and the optional ones have a `@default`.
  it('gives every option a default and every options type an example', async () => {
    const { kinds, project } = await referenceModel();
    const problems: string[] = [];
    const optionsTypes: string[] = [];
    const inlineParameters: string[] = [];

    /**
     * The properties of an object type, and of the object types nested in them: optional ones without a `@default`,
     * and (`inline`: members TypeDoc's validation does not see, of a parameter's or a property's object type) ones
     * without a description.
     */
    const checkMembers = (members: readonly Reflection[] | undefined, path: string, inline: boolean): void => {
      for (const member of members ?? []) {
        if (member.kind !== kinds.Property) continue;
        const where = `${path}.${member.name}`;
        if (inline && !member.comment?.summary.some((part) => part.text.trim() !== '')) problems.push(`${where}: not documented`);
        if (member.flags.isOptional && !hasTag(member.comment, '@default')) problems.push(`${where}: optional, without @default`);
        for (const nested of objectTypesOf(member.type)) checkMembers(nested.children, where, true);
      }
    };

    walk(project, [], (reflection, path) => {
      const name = path.join('.');
      if ((reflection.kind === kinds.Interface || reflection.kind === kinds.TypeAlias) && reflection.name.endsWith('Options')) {
        optionsTypes.push(reflection.name);
        if (!hasTag(reflection.comment, '@example')) problems.push(`${name}: options type without @example`);
        if (reflection.kind === kinds.Interface) checkMembers(reflection.children, name, false);
        else for (const object of objectTypesOf(reflection.type)) checkMembers(object.children, name, false);
      }
      for (const signature of reflection.signatures ?? []) {
        for (const parameter of signature.parameters ?? []) {
          const objects = objectTypesOf(parameter.type).filter((object) => object.children?.length);
          if (objects.length === 0) continue;
          inlineParameters.push(`${name}(${parameter.name})`);
          for (const object of objects) checkMembers(object.children, `${name}(${parameter.name})`, true);
        }
      }
    });

    expect(problems).toEqual([]);
    // The walk saw what it is meant to check (a change in TypeDoc's model would otherwise pass unchecked).
    expect(optionsTypes).toEqual(expect.arrayContaining(['ThrottledWorkerOptions', 'GrantorOptions', 'ThrottledBullMQAdapterOptions', 'BoardOptions']));
    expect(inlineParameters).toEqual(expect.arrayContaining(['index.Throttle.rate(options)', 'index.ThrottledWorker.getNextJob(options)']));
  }, 120_000);
});

/** The part of TypeDoc's JSON model (JSONOutput) read here. */
interface Reflection {
  name: string;
  kind: number;
  flags: { isOptional?: boolean };
  comment?: { summary: { text: string }[]; blockTags?: { tag: string }[] };
  children?: Reflection[];
  signatures?: Signature[];
  type?: TypeNode;
}
interface Signature {
  parameters?: Reflection[];
}
interface TypeNode {
  type: string;
  declaration?: Reflection;
  types?: TypeNode[];
}
interface ReferenceModel {
  kinds: { Interface: number; TypeAlias: number; Property: number };
  project: Reflection;
}

function hasTag(comment: Reflection['comment'], tag: string): boolean {
  return comment?.blockTags?.some((t) => t.tag === tag) ?? false;
}

/** The object types (`{ ... }`) a type is or holds: itself, or the members of an intersection or union. */
function objectTypesOf(type: TypeNode | undefined): Reflection[] {
  if (!type) return [];
  if (type.type === 'reflection' && type.declaration) return [type.declaration];
  if (type.type === 'intersection' || type.type === 'union') return (type.types ?? []).flatMap(objectTypesOf);
  return [];
}

function walk(reflection: Reflection, path: string[], visit: (reflection: Reflection, path: string[]) => void): void {
  visit(reflection, path);
  for (const child of reflection.children ?? []) walk(child, [...path, child.name], visit);
}

const MARK = '\n@@typedoc-json@@';

/**
 * The reference as `npm run docs` builds it (typedoc.json, package.json, tsconfig.json), converted but never
 * rendered: the child prints TypeDoc's JSON model of it, and writes no file.
 */
async function referenceModel(): Promise<ReferenceModel> {
  const script = `
    const td = await import(${JSON.stringify(pathToFileURL(join(TYPEDOC, 'dist', 'index.js')).href)});
    const app = await td.Application.bootstrapWithPlugins({}, [new td.TypeDocReader(), new td.PackageJsonReader(), new td.TSConfigReader()]);
    const project = await app.convert();
    if (!project) process.exit(3);
    const { Interface, TypeAlias, Property } = td.ReflectionKind;
    process.stdout.write(${JSON.stringify(MARK)} + JSON.stringify({ kinds: { Interface, TypeAlias, Property }, project: app.serializer.projectToObject(project, process.cwd()) }));
  `;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT, env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' }, maxBuffer: 256 * 1024 * 1024,
  });
  const at = stdout.indexOf(MARK);
  if (at < 0) throw new Error(`TypeDoc printed no model:\n${stdout}`);
  return JSON.parse(stdout.slice(at + MARK.length)) as ReferenceModel;
}
