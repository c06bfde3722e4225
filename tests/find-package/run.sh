#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the built fwdsink into a scratch prefix and builds + runs the consumer
# project against it. Usage: run.sh BUILD_DIR SCRATCH_DIR
set -euo pipefail
build=$1 scratch=$2
src=$(cd "$(dirname "$0")" && pwd)
rm -rf "$scratch" && mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
cmake -S "$src" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/build" >/dev/null
"$scratch/build/consumer"
"$scratch/build/c_consumer"
