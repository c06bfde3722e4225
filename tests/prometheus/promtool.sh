#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs `promtool ARGS...` for ctest (LABEL prometheus); exits 77, which ctest reports as
# skipped, when promtool is not installed (scripts/deps.sh installs Debian's prometheus).
set -euo pipefail
if ! command -v promtool >/dev/null; then
  echo "promtool is not installed (scripts/deps.sh installs prometheus): skipped"
  exit 77
fi
exec promtool "$@"
