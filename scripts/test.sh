#!/usr/bin/env bash
# The README's test command: installs what is missing (apt-get), configures, builds and
# runs every test through ctest. On a fresh Debian 12 machine as root it needs nothing else.
#
#   scripts/test.sh              plain build in build/
#   scripts/test.sh --sanitize   AddressSanitizer + UBSan build in build-asan/
#   extra arguments after -- go to ctest (e.g. -- -R backoff)
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=OFF
builddir=build
ctest_args=()
while (($#)); do
  case "$1" in
    --sanitize) sanitize=ON; builddir=build-asan ;;
    --) shift; ctest_args=("$@"); break ;;
    *) echo "test.sh: unknown argument '$1' (use --sanitize, or -- CTEST_ARGS)" >&2; exit 64 ;;
  esac
  shift
done

bash scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$builddir" -DFWDSINK_SANITIZE="$sanitize" -DFWDSINK_WERROR=ON \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$builddir" -j "$jobs"
if [[ $sanitize == ON ]]; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
cd "$builddir"
ctest --output-on-failure -j "$jobs" "${ctest_args[@]}"
