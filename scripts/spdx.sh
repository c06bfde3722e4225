#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every source file carries an SPDX license line (LICENSE: Apache-2.0).
#
#   scripts/spdx.sh           adds the line where it is missing (after a #! line)
#   scripts/spdx.sh --check   changes nothing; lists the files without it, exits 1 if any
#
# Sources: C/C++ (*.h, *.cc, *.c), shell scripts, CMake files and Makefiles tracked by git.
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "spdx.sh: unknown argument '$1' (use --check)" >&2; exit 64 ;;
esac

tag="SPDX-License-Identifier: Apache-2.0"
bad=0
while IFS= read -r -d '' f; do
  head -3 "$f" | grep -F "$tag" >/dev/null && continue
  if ((check)); then
    echo "no SPDX line: $f"
    bad=1
    continue
  fi
  case "$f" in
    *.h | *.cc | *.c) line="// $tag" ;;
    *) line="# $tag" ;;
  esac
  if [[ $(head -c 2 "$f") == "#!" ]]; then
    { head -1 "$f"; echo "$line"; tail -n +2 "$f"; } >"$f.spdx"
  else
    { echo "$line"; cat "$f"; } >"$f.spdx"
  fi
  chmod --reference="$f" "$f.spdx"
  mv "$f.spdx" "$f"
done < <(git ls-files -z -- '*.h' '*.cc' '*.c' '*.sh' 'CMakeLists.txt' '*/CMakeLists.txt' \
           '*.cmake' '*.cmake.in' '*/Makefile' '.ci/run')
exit "$bad"
