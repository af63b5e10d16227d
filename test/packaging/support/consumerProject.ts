import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from './packedPackage';

const run = promisify(execFile);

export type ModuleResolution = 'node16' | 'nodenext' | 'bundler';

/** How each resolution is used in a consumer's tsconfig (bundler needs an ES module setting). */
const MODULE_FOR: Record<ModuleResolution, string> = { node16: 'node16', nodenext: 'nodenext', bundler: 'esnext' };

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

async function runIn(cwd: string, file: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  try {
    const { stdout, stderr } = await run(file, args, { cwd, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : 1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? String(error) };
  }
}

/**
 * An app in its own folder that installs the packed tarball as a user would (`npm install`, from npm's cache
 * when it has the versions), with the sources it is given.
 */
export class ConsumerProject {
  constructor(readonly dir: string) {}

  static async create(dir: string, dependencies: Record<string, string>, files: Record<string, string>): Promise<ConsumerProject> {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, dependencies }, null, 2)}\n`);
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    const project = new ConsumerProject(dir);
    const install = await runIn(dir, 'npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', '--no-package-lock', '--loglevel=error']);
    if (install.code !== 0) throw new Error(`npm install in ${dir} failed:\n${install.stderr}`);
    return project;
  }

  /** `tsc --noEmit` over `files` with skipLibCheck off, so the package's declarations are checked too. */
  typecheck(resolution: ModuleResolution, files: string[]): Promise<RunResult> {
    const tsconfig = `tsconfig.${resolution}.json`;
    const compilerOptions = {
      strict: true,
      noEmit: true,
      skipLibCheck: false,
      target: 'ES2022',
      module: MODULE_FOR[resolution],
      moduleResolution: resolution,
      types: ['node'],
    };
    writeFileSync(join(this.dir, tsconfig), `${JSON.stringify({ compilerOptions, files }, null, 2)}\n`);
    return runIn(this.dir, process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', tsconfig]);
  }

  node(args: string[], env?: NodeJS.ProcessEnv): Promise<RunResult> {
    return runIn(this.dir, process.execPath, args, env);
  }

  npx(args: string[]): Promise<RunResult> {
    return runIn(this.dir, 'npx', ['--no', '--', ...args]);
  }
}
