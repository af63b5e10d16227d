// BULLMQ_THROTTLE_BULLMQ_DIR (set by .ci/bullmq-lines) names another install's node_modules: `bullmq` and
// `ioredis` then load from there, in src and tests alike, so the suite runs against that bullmq line.
const bullmqLineDir = process.env.BULLMQ_THROTTLE_BULLMQ_DIR;

const esmOnlyPackages = [
  'log-update', 'cli-truncate', 'ansi-escapes', 'environment', 'cli-cursor', 'restore-cursor', 'onetime', 'mimic-function',
  'wrap-ansi', 'slice-ansi', 'strip-ansi', 'ansi-regex', 'ansi-styles', 'string-width', 'get-east-asian-width',
  'is-fullwidth-code-point', 'emoji-regex',
];

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.check.json' }],
    '^.+\\.js$': '<rootDir>/test/support/esmToCommonJs.js',
  },
  // Every package stays as it is but the ESM-only ones the terminal views load (log-update, cli-truncate and theirs).
  transformIgnorePatterns: [`/node_modules/(?!(${esmOnlyPackages.join('|')})/)`],
  globalSetup: '<rootDir>/test/support/globalSetup.ts',
  globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
  testTimeout: 60000,
  moduleNameMapper: bullmqLineDir
    ? { '^(bullmq|ioredis)$': `${bullmqLineDir}/$1`, '^(bullmq|ioredis)/(.*)$': `${bullmqLineDir}/$1/$2` }
    : {},
};
