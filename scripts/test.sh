#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's test command: installs what is missing (apt-get), configures, builds and
# runs every test through ctest. On a fresh Debian 12 machine as root it needs nothing else.
#
#   scripts/test.sh              plain build in build/
#   scripts/test.sh --sanitize   AddressSanitizer + UBSan build in build-asan/
#   scripts/test.sh --fuzz       clang build of the libFuzzer targets in build-fuzz/ and
#                                their short runs (ctest -L fuzz; LLP 0023#fuzzing)
#   extra arguments after -- go to ctest (e.g. -- -R backoff)
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=OFF
fuzz=OFF
builddir=build
ctest_args=()
while (($#)); do
  case "$1" in
    --sanitize) sanitize=ON; builddir=build-asan ;;
    --fuzz) fuzz=ON; builddir=build-fuzz ;;
    --) shift; ctest_args=("$@"); break ;;
    *) echo "test.sh: unknown argument '$1' (use --sanitize, --fuzz, or -- CTEST_ARGS)" >&2; exit 64 ;;
  esac
  shift
done

bash scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
if [[ $fuzz == ON ]]; then
  # Its own build: clang, the library instrumented for libFuzzer, only the fuzz targets.
  CXX=clang++ cmake -S . -B "$builddir" -DFWDSINK_FUZZ=ON -DFWDSINK_WERROR=ON \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$builddir" -j "$jobs" --target fuzz_all
  cd "$builddir"
  ctest --output-on-failure -j "$jobs" -L fuzz "${ctest_args[@]}"
  exit 0
fi
cmake -S . -B "$builddir" -DFWDSINK_SANITIZE="$sanitize" -DFWDSINK_WERROR=ON \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$builddir" -j "$jobs"
if [[ $sanitize == ON ]]; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
cd "$builddir"
ctest --output-on-failure -j "$jobs" "${ctest_args[@]}"
