#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs libFuzzer targets from a fuzz build (see tests/fuzz/CMakeLists.txt).
#
#   tests/fuzz/run.sh BUILD_DIR SECONDS [TARGET...]     (default: every target)
#
# Each target starts from its seed corpus tests/fuzz/corpus/<target>/ and writes new
# inputs to BUILD_DIR/fuzz-corpus/<target>/ (never to the source tree); a crash leaves
# its input in BUILD_DIR/fuzz-artifacts/. ctest runs 3 s each; the documented longer
# run (LLP 0023#fuzzing) is 300 s each:  tests/fuzz/run.sh build-fuzz 300
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1 seconds=$2; shift 2
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=($(cd "$here" && ls fuzz_*.cc | sed 's/^fuzz_//; s/\.cc$//'))
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for t in "${targets[@]}"; do
  bin=$(find "$build" -name "fuzz_$t" -type f -perm -u+x | head -n 1)
  [[ -n $bin ]] || { echo "run.sh: no fuzz_$t in $build" >&2; exit 1; }
  work=$build/fuzz-corpus/$t
  mkdir -p "$work" "$build/fuzz-artifacts"
  echo "== fuzz_$t for ${seconds}s"
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
         -artifact_prefix="$build/fuzz-artifacts/$t-" "$work" "$here/corpus/$t"
done
