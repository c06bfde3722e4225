#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the built tree into a scratch prefix and runs the installed binaries as an
# operator would: `fwdsink --version`, `fwdsink-central --version`, the LICENSE, and a
# --help that names every settings key. Usage: run.sh BUILD_DIR SCRATCH_DIR
set -euo pipefail
build=$1 scratch=$2
rm -rf "$scratch" && mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
bin=$scratch/prefix/bin
fail() { echo "install test: $*" >&2; exit 1; }

[[ -x $bin/fwdsink ]] || fail "bin/fwdsink not installed"
[[ -x $bin/fwdsink-central ]] || fail "bin/fwdsink-central not installed"
license=$(find "$scratch/prefix/share/doc" -name LICENSE | head -1)
[[ -n $license ]] && grep -q "Apache License" "$license" || fail "no LICENSE under share/doc"

for b in fwdsink fwdsink-central; do
  out=$(env -i PATH=/usr/bin:/bin "$bin/$b" --version) || fail "$b --version failed"
  for want in "$b [0-9]" "^OpenSSL [0-9]" "^zstd [0-9]" "^cpp-httplib [0-9]"; do
    grep -Eq "$want" <<<"$out" || fail "$b --version lacks '$want': $out"
  done
done

# Every key --print-config shows has its flag in --help (help generated from the table).
help=$("$bin/fwdsink" forward --help)
keys=$("$bin/fwdsink" forward --print-config --spool /x --url http://h/ |
  sed -n 's/^# \([a-z_]*\) (unset)$/\1/p; s/^\([a-z_]*\) = .*/\1/p' | sort -u)
[[ -n $keys ]] || fail "--print-config listed no keys"
for k in $keys; do
  grep -q -- "--${k//_/-} \|--${k//_/-}$" <<<"$help" || fail "--help lacks --${k//_/-}"
done
echo "install test: ok ($(wc -w <<<"$keys") keys)"
