#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compares the built libfwdsink.so's ABI with the record in abi/ (abigail-tools).
# Fails when the C API changed incompatibly (a function removed, a signature or an
# exported type changed) and the SONAME is still the recorded one: either undo the
# change, or bump FWDSINK_SOVERSION in CMakeLists.txt and record the new ABI with
# abi/update.sh. A compatible change (a function added) passes with a reminder to
# record it. Exit 77 (ctest: skipped) when abidw/abidiff are not installed.
# Usage: check.sh LIBRARY RECORD.abi                          @ref LLP 0026#abi
set -euo pipefail
lib=$1 record=$2
if ! command -v abidiff >/dev/null || ! command -v abidw >/dev/null; then
  echo "abi: SKIPPED: abidiff/abidw not found (Debian package abigail-tools; scripts/deps.sh)"
  exit 77
fi
# grep reads all of objdump's output (no -q): with pipefail, an early exit would kill
# objdump with SIGPIPE and read as "no debug info" (seen as a random skip under load).
if ! objdump -h "$lib" | grep '\.debug_info' >/dev/null; then
  echo "abi: SKIPPED: $lib has no debug info (build RelWithDebInfo or Debug: abidw reads DWARF)"
  exit 77
fi
if [[ ! -f $record ]]; then
  echo "abi: no record $record: create it with abi/update.sh" >&2
  exit 1
fi
recorded_soname=$(sed -n "s/.*<abi-corpus [^>]*soname='\([^']*\)'.*/\1/p" "$record" | head -1)
built_soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
echo "abi: recorded $recorded_soname, built $built_soname"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The same options as abi/update.sh: the exported functions and the types reachable
# from them (the handles are opaque), no locations or paths.
abidw --exported-interfaces-only --no-show-locs --no-comp-dir-path --no-corpus-path \
      --out-file "$tmp/built.abi" "$lib"
set +e
abidiff "$record" "$tmp/built.abi" >"$tmp/diff.txt" 2>&1
rc=$?
set -e
cat "$tmp/diff.txt"
# abidiff's exit status is a bit field: 1 error, 2 usage, 4 ABI change, 8 incompatible.
if (( rc & 3 )); then echo "abi: abidiff failed (exit $rc)" >&2; exit 1; fi
if (( rc & 8 )); then
  if [[ $built_soname != "$recorded_soname" ]]; then
    echo "abi: incompatible change with a new SONAME ($built_soname): record it with abi/update.sh"
    exit 0
  fi
  echo "abi: FAIL: incompatible change to the C API without a SONAME bump (still $built_soname)" >&2
  exit 1
fi
if (( rc & 4 )); then
  echo "abi: compatible change (e.g. a function added): record it with abi/update.sh"
fi
echo "abi: ok"
