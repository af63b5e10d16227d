// Preloaded (node --require) by .ci/bullmq-lines: in this process and every child process a test starts,
// `require('bullmq')` and `require('ioredis')` (and their subpaths) load the install whose node_modules
// BULLMQ_THROTTLE_BULLMQ_DIR names, as jest.config.js's moduleNameMapper does inside jest.
'use strict';
const Module = require('node:module');
const path = require('node:path');

const dir = process.env.BULLMQ_THROTTLE_BULLMQ_DIR;
if (dir) {
  const redirected = /^(bullmq|ioredis)(\/.*)?$/;
  const resolveFilename = Module._resolveFilename;
  Module._resolveFilename = function (request, parent, ...rest) {
    if (redirected.test(request)) return resolveFilename.call(this, path.join(dir, request), parent, ...rest);
    return resolveFilename.call(this, request, parent, ...rest);
  };
}
