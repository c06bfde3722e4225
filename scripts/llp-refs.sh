#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every `@ref LLP NNNN#anchor` in the code names a page of LLP/ and a section of it
# ({#anchor}); a bare `@ref LLP NNNN` names a page. Exits 1 listing the dangling ones.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
while IFS= read -r ref; do
  page=${ref%%#*}
  anchor=
  [[ $ref == *"#"* ]] && anchor=${ref#*#}
  files=(LLP/"$page"-*.md)
  if [[ ! -f ${files[0]} ]]; then
    echo "no LLP page $page (from @ref LLP $ref)"
    bad=1
  elif [[ -n $anchor ]] && ! grep -F "{#$anchor}" "${files[0]}" >/dev/null; then
    echo "no section {#$anchor} in ${files[0]} (from @ref LLP $ref)"
    bad=1
  fi
done < <(git ls-files -z -- '*.h' '*.cc' '*.c' '*.sh' '*CMakeLists.txt' |
           xargs -0 grep -ohE '@ref LLP [0-9]{4}(#[A-Za-z0-9_-]+)?' | sed 's/@ref LLP //' | sort -u)
exit "$bad"
