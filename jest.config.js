// BULLMQ_THROTTLE_BULLMQ_DIR (set by .ci/bullmq-lines) names another install's node_modules: `bullmq` and
// `ioredis` then load from there, in src and tests alike, so the suite runs against that bullmq line.
const bullmqLineDir = process.env.BULLMQ_THROTTLE_BULLMQ_DIR;
const { availableParallelism } = require('node:os');

const esmOnlyPackages = [
  'log-update', 'cli-truncate', 'ansi-escapes', 'environment', 'cli-cursor', 'restore-cursor', 'onetime', 'mimic-function',
  'wrap-ansi', 'slice-ansi', 'strip-ansi', 'ansi-regex', 'ansi-styles', 'string-width', 'get-east-asian-width',
  'is-fullwidth-code-point', 'emoji-regex',
];

// swc strips types without checking them (`npm run typecheck` does that), as tsc would emit for tsconfig.json:
// ES2021 with class fields assigned in the constructor, CommonJS.
const swc = (syntax) => ['@swc/jest', {
  jsc: { parser: { syntax }, target: 'es2021', transform: { useDefineForClassFields: false } },
  module: { type: 'commonjs' },
  sourceMaps: 'inline',
}];

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  // Files run side by side, each jest worker with a Redis of its own (test/support/globalSetup.ts). Most of a test's
  // time is spent waiting on Redis, child processes and windows, not on a CPU: two workers per core keep the
  // cores busy (measured on 2 cores: 4 workers ran the suite in about a quarter of the time one did).
  maxWorkers: Math.min(8, 2 * availableParallelism()),
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': swc('typescript'),
    // The ESM-only packages the terminal views load (log-update, cli-truncate and theirs), turned into CommonJS.
    '^.+\\.js$': swc('ecmascript'),
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmOnlyPackages.join('|')})/)`],
  globalSetup: '<rootDir>/test/support/globalSetup.ts',
  globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
  testTimeout: 60000,
  moduleNameMapper: bullmqLineDir
    ? { '^(bullmq|ioredis)$': `${bullmqLineDir}/$1`, '^(bullmq|ioredis)/(.*)$': `${bullmqLineDir}/$1/$2` }
    : {},
};
