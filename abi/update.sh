#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Records the C API's ABI of a built libfwdsink.so into abi/libfwdsink.so.N.abi (N the
# SONAME's version). Run it after a deliberate ABI change (with a SONAME bump when the
# change is incompatible) and commit the file. @ref LLP 0026#abi
# Usage: abi/update.sh BUILD_DIR        (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
lib=$(readlink -f "$build/libfwdsink.so")
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
# The exported functions and the types reachable from them (the handles are opaque),
# without locations or paths, so the record does not depend on the checkout.
abidw --exported-interfaces-only --no-show-locs --no-comp-dir-path --no-corpus-path \
      --out-file "abi/$soname.abi" "$lib"
sed -i "s#path='$PWD/#path='#" "abi/$soname.abi"
echo "recorded abi/$soname.abi"
