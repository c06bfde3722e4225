#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Formats fwdsink's C++ sources with clang-format and the repository's .clang-format.
#
#   scripts/format.sh           rewrites the files in place
#   scripts/format.sh --check   changes nothing; lists the files that differ, exits 1 if any
#
# Covers sink/, backoff/, examples/ and tests/ (*.h, *.cc). CLANG_FORMAT overrides the
# binary (default: clang-format on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "format.sh: unknown argument '$1' (use --check)" >&2; exit 64 ;;
esac

cf=${CLANG_FORMAT:-clang-format}
command -v "$cf" >/dev/null || { echo "format.sh: $cf not found" >&2; exit 69; }

mapfile -d '' files < <(find sink backoff examples tests -type f \( -name '*.h' -o -name '*.cc' \) \
                          -print0 | sort -z)

if ((check == 0)); then
  "$cf" -i --style=file "${files[@]}"
  exit 0
fi

bad=0
for f in "${files[@]}"; do
  if ! "$cf" --style=file "$f" | cmp -s - "$f"; then
    echo "needs formatting: $f"
    bad=1
  fi
done
exit "$bad"
