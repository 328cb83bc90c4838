#!/usr/bin/env bash
# Installs the real promptfoo that test/evals/promptfoo.test.ts runs on an exported eval case.
# promptfoo is large (about 1.5 GB installed), so it stays out of package.json: it is cached in
# .vscode-test/promptfoo (gitignored; CI keeps .vscode-test per run). Idempotent: a second run
# checks the installed version and returns in a second.
# 0.121.x is the last line that runs on Node 20; later ones need Node >= 22.22.
# See ../shared/recipes/promptfoo.md for the offline settings the test uses.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="$ROOT/.vscode-test"
PROMPTFOO_VERSION="0.121.20"
PREFIX="$CACHE/promptfoo"
PKG="$PREFIX/node_modules/promptfoo/package.json"

log() { printf '[promptfoo setup] %s\n' "$*"; }

mkdir -p "$CACHE"
installed=""
[ -f "$PKG" ] && installed="$(node -p "require('$PKG').version")"
if [ "$installed" != "$PROMPTFOO_VERSION" ] || [ ! -f "$PREFIX/node_modules/.bin/promptfoo" ]; then
  log "installing promptfoo@$PROMPTFOO_VERSION into .vscode-test/promptfoo (about 1.5 GB, a few minutes)"
  start=$SECONDS
  # Under `npm test` the outer npm's settings are exported; the cache prefix is its own project.
  env -u npm_config_user_agent -u npm_node_execpath -u npm_execpath -u npm_config_prefix \
    npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error \
    "promptfoo@$PROMPTFOO_VERSION" >/dev/null
  log "installed in $((SECONDS - start)) s"
fi
log "promptfoo $(node -p "require('$PKG').version") ($PREFIX/node_modules/.bin/promptfoo)"
