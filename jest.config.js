// BULLMQ_THROTTLE_BULLMQ_DIR (set by .ci/bullmq-lines) names another install's node_modules: `bullmq` and
// `ioredis` then load from there, in src and tests alike, so the suite runs against that bullmq line.
const bullmqLineDir = process.env.BULLMQ_THROTTLE_BULLMQ_DIR;

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.check.json' }] },
  globalSetup: '<rootDir>/test/support/globalSetup.ts',
  globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
  testTimeout: 60000,
  moduleNameMapper: bullmqLineDir
    ? { '^(bullmq|ioredis)$': `${bullmqLineDir}/$1`, '^(bullmq|ioredis)/(.*)$': `${bullmqLineDir}/$1/$2` }
    : {},
};
