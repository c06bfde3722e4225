#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the built fwdsink into a scratch prefix and builds examples/c-agent against
# it with its own Makefile and pkg-config alone (fwdsink.pc, and fwdsink-static.pc for a
# static link); then runs the shared-library build against fwdsink-central, stops it
# with SIGTERM and checks every row it wrote is delivered or still sealed in the spool,
# none twice. Usage: run.sh SOURCE_DIR BUILD_DIR SCRATCH_DIR CENTRAL_BIN
set -euo pipefail
src=$1 build=$2 scratch=$3 central=$4
rm -rf "$scratch" && mkdir -p "$scratch"/{shared,static,out}
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
pcdir=$(dirname "$(find "$scratch/prefix" -name fwdsink.pc | head -1)")
export PKG_CONFIG_PATH=$pcdir
echo "pkg-config --cflags --libs fwdsink: $(pkg-config --cflags --libs fwdsink)"
make -s -C "$src/examples/c-agent" OUT="$scratch/shared"
make -s -C "$src/examples/c-agent" OUT="$scratch/static" FWDSINK_PC=fwdsink-static
# The static build needs no libfwdsink.so at run time.
if ldd "$scratch/static/c-agent" | grep libfwdsink >/dev/null; then
  echo "FAIL: the static build links libfwdsink.so" >&2; exit 1
fi
set +e; "$scratch/static/c-agent" >/dev/null 2>&1; rc=$?; set -e
[[ $rc == 64 ]] || { echo "FAIL: static c-agent without arguments exited $rc, not 64" >&2; exit 1; }

"$central" --listen 127.0.0.1:0 --out "$scratch/out" --port-file "$scratch/port" \
  >"$scratch/central.log" 2>&1 &
central_pid=$!
trap 'kill $central_pid 2>/dev/null || true' EXIT
for _ in $(seq 200); do [[ -s $scratch/port ]] && break; sleep 0.05; done
port=$(cat "$scratch/port")
export LD_LIBRARY_PATH=$(pkg-config --variable=libdir fwdsink)
"$scratch/shared/c-agent" "$scratch/spool" "http://127.0.0.1:$port/ingest" poll=100ms \
  2>"$scratch/agent.log" &
agent=$!
sleep 3
kill -TERM $agent
start=$(date +%s%N)
wait $agent
ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "c-agent stopped ${ms} ms after SIGTERM: $(tail -1 "$scratch/agent.log")"
((ms < 2000)) || { echo "FAIL: c-agent took ${ms} ms to stop" >&2; exit 1; }
rows=$(sed -n 's/.*stopped after \([0-9]*\) rows.*/\1/p' "$scratch/agent.log")
shopt -s nullglob
ready=("$scratch/spool/ready/"*.ndjson)
touch "$scratch/out/received.ndjson"
delivered=$(grep -c '"agent":"c-agent"' "$scratch/out/received.ndjson" || true)
left=$(cat /dev/null "${ready[@]}" | wc -l)
unique=$(cat "$scratch/out/received.ndjson" /dev/null "${ready[@]}" |
  { grep -o '"seq":[0-9]*' || true; } | sort -u | wc -l)
echo "rows written $rows, delivered $delivered, sealed and left $left, distinct $unique"
((delivered > 0)) || { echo "FAIL: nothing delivered" >&2; exit 1; }
((delivered + left == rows && unique == rows)) || { echo "FAIL: rows lost or doubled" >&2; exit 1; }
echo "ok"
