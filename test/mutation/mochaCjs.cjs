"use strict";
/**
 * Preloaded by `npm run test:mutation` only (NODE_OPTIONS=--require, so Stryker's test-runner
 * children get it too). Stryker's mocha runner (10.1) requires mocha's CLI helpers by path without
 * an extension (mocha/lib/cli/run-helpers, options, collect-files); mocha 12.0 ships them as
 * .cjs, which require() does not try. This resolves those three requests to the .cjs files and
 * changes nothing else.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Module = require("node:module");

const HELPER = /[\\/]mocha[\\/]lib[\\/]cli[\\/](run-helpers|options|collect-files)$/;
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return resolve.call(this, HELPER.test(request) ? `${request}.cjs` : request, ...rest);
};
