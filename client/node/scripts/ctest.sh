#!/usr/bin/env bash
# The Node client's tests, as ctest runs them: installs the npm packages of
# the committed package-lock.json with `npm ci` when node_modules is missing
# or was installed from another lockfile (the only step that needs the npm
# registry), then
#   ctest.sh [node --test args]  every test/*.test.js with Node's test runner
#                                against a private MariaDB and $MSGQD
#                                (msgq_node_client_test);
#   ctest.sh types               tsc: index.d.ts with test/types/, and the
#                                tests' JavaScript against index.d.ts
#                                (msgq_node_client_types);
#   ctest.sh package             npm pack, an offline install of the tarball,
#                                require(), import and types of the installed
#                                package (msgq_node_client_package);
#   ctest.sh install             only the npm ci (for the conformance suite's
#                                driver, client/conformance).
#
#   MSGQD=build/server/msgqd client/node/scripts/ctest.sh [node --test args]
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in node npm; do
  command -v "$tool" >/dev/null ||
    { echo "ctest.sh: $tool not found (tools/setup installs nodejs and npm)" >&2; exit 1; }
done

stamp=node_modules/.msgq-package-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "ctest.sh: npm ci (node_modules missing or from another lockfile)"
  npm ci --no-audit --no-fund
  echo "$want" >"$stamp"
fi

case "${1:-}" in
  install)
    exit 0 ;;
  types)
    node node_modules/typescript/bin/tsc -p tsconfig.json
    exec node node_modules/typescript/bin/tsc -p test/tsconfig.json ;;
  package)
    exec node --test --test-force-exit test/package/*.test.js ;;
esac

# One test file at a time: each starts its own MariaDB and msgqd, and the
# timing checks (retry delays, heartbeats) want the CPU. --test-force-exit:
# a handle left open by a failed test must not hang the run (each file's
# after() hook still stops its servers first).
exec node --test --test-concurrency=1 --test-force-exit "$@" test/*.test.js
