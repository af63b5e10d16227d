// `npm run test:quick`: the inner loop. Every test that needs only the per-worker Redis (test/support/quickTests.js
// says which files start processes of their own: clusters, sentinels, child workers, the CLI, Chromium).
const { join } = require('node:path');
const base = require('./jest.config');
const { processStartingTests } = require('./test/support/quickTests');

const escape = (path) => path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

module.exports = {
  ...base,
  testPathIgnorePatterns: ['/node_modules/', ...processStartingTests(join(__dirname, 'test')).map((file) => `^${escape(file)}$`)],
};
