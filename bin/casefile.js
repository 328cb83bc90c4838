#!/usr/bin/env node
"use strict";
// The CLI is bundled to dist/cli.js by `npm run build`.
require("../dist/cli.js").cli();
