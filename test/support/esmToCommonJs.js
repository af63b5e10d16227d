// Jest loads modules as CommonJS, and log-update and cli-truncate (the terminal views) and their dependencies
// are ESM only: TypeScript's transpiler turns them into CommonJS, as ts-jest does our sources. No type checks.
const ts = require('typescript');

module.exports = {
  process(source, filename) {
    const { outputText, sourceMapText } = ts.transpileModule(source, {
      fileName: filename,
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2021, allowJs: true, esModuleInterop: true, sourceMap: true },
    });
    return { code: outputText, map: sourceMapText };
  },
};
