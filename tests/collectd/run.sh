#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs Debian's collectd in the foreground with write_fwdsink and the cpu, memory and
# load plugins at Interval 1 against fwdsink-central for ~10 s, then stops it with
# SIGTERM and checks: rows arrived; collectd stopped promptly; after a restart, every
# partition sealed by the first run (at shutdown included) was delivered, and no row
# was stored twice. Exit 77 (ctest: skipped) when collectd is not installed.
# Usage: run.sh PLUGIN_SO CENTRAL_BIN SCRATCH_DIR          @ref LLP 0026#collectd
set -euo pipefail
plugin=$1 central=$2 scratch=$3
collectd=$(command -v collectd || echo /usr/sbin/collectd)
if [[ ! -x $collectd || ! -f /usr/lib/collectd/cpu.so ]]; then
  echo "collectd: SKIPPED: collectd is not installed (Debian package collectd-core; scripts/deps.sh)"
  exit 77
fi
if [[ ! -f $plugin ]]; then
  echo "collectd: SKIPPED: write_fwdsink.so was not built (Debian package collectd-dev)"
  exit 77
fi
rm -rf "$scratch" && mkdir -p "$scratch"/{plugins,out,base}
for p in cpu memory load logfile; do cp "/usr/lib/collectd/$p.so" "$scratch/plugins/"; done
cp "$plugin" "$scratch/plugins/write_fwdsink.so"  # collectd refuses symlinks

"$central" --listen 127.0.0.1:0 --out "$scratch/out" --port-file "$scratch/port" \
  >"$scratch/central.log" 2>&1 &
central_pid=$!
collectd_pid=
cleanup() {
  [[ -n $collectd_pid ]] && kill -KILL "$collectd_pid" 2>/dev/null || true
  kill "$central_pid" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 200); do [[ -s $scratch/port ]] && break; sleep 0.05; done
port=$(cat "$scratch/port")

source "$(dirname "${BASH_SOURCE[0]}")/conf.sh"
collectd_conf "$scratch" "$port" 'Property "poll" "200ms"' 'SealRows 25' 'SealInterval 2'

run_collectd() {  # run_collectd SECONDS: runs it, SIGTERMs it, prints the stop time in ms
  "$collectd" -f -C "$scratch/collectd.conf" >>"$scratch/collectd.stdout" 2>&1 &
  collectd_pid=$!
  sleep "$1"
  kill -0 "$collectd_pid" || { echo "FAIL: collectd exited early" >&2; cat "$scratch/collectd.log" >&2; exit 1; }
  local start; start=$(date +%s%N)
  kill -TERM "$collectd_pid"
  for _ in $(seq 100); do kill -0 "$collectd_pid" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$collectd_pid" 2>/dev/null; then
    echo "FAIL: collectd still runs 5 s after SIGTERM" >&2; exit 1
  fi
  wait "$collectd_pid" || true
  collectd_pid=
  echo $(( ($(date +%s%N) - start) / 1000000 ))
}

ms=$(run_collectd 10)
received=$(wc -l <"$scratch/out/received.ndjson" 2>/dev/null || echo 0)
left=$(ls "$scratch/spool/ready" | grep -c '\.ndjson$' || true)
echo "first run: stopped ${ms} ms after SIGTERM; $received rows received; $left partitions left sealed"
grep -q 'write_fwdsink: fwdsink' "$scratch/collectd.log" || { echo "FAIL: plugin did not start" >&2; cat "$scratch/collectd.log" >&2; exit 1; }
((received > 0)) || { echo "FAIL: no row arrived" >&2; cat "$scratch/collectd.log" >&2; exit 1; }
((ms < 3000)) || { echo "FAIL: collectd took ${ms} ms to stop" >&2; exit 1; }
for p in cpu memory load; do
  grep -q "\"plugin\":\"$p\"" "$scratch/out/received.ndjson" || { echo "FAIL: no $p rows" >&2; exit 1; }
done
shopt -s nullglob
ready=("$scratch/spool/ready/"*.ndjson)
cat /dev/null "${ready[@]}" | sort >"$scratch/left.rows"
sealed_rows=$(wc -l <"$scratch/left.rows")

ms=$(run_collectd 3)
echo "second run: stopped ${ms} ms after SIGTERM"
# Every row sealed by the first run and left behind arrived in the second.
missing=$(sort "$scratch/out/received.ndjson" | comm -23 "$scratch/left.rows" - | wc -l)
dups=$(sort "$scratch/out/received.ndjson" | uniq -d | wc -l)
total=$(wc -l <"$scratch/out/received.ndjson")
echo "rows left by the first run: $sealed_rows, missing after the restart: $missing; received $total, duplicates $dups"
((missing == 0)) || { echo "FAIL: rows sealed by the first run were not delivered" >&2; exit 1; }
((dups == 0)) || { echo "FAIL: rows stored twice" >&2; exit 1; }
grep -i 'error' "$scratch/collectd.log" | grep -i fwdsink && { echo "FAIL: write_fwdsink logged errors" >&2; exit 1; }

# Third run against a receiver that throttles (429, Retry-After: 30): SIGTERM must still
# stop collectd promptly, fwdsink_close() cutting the pause short.
kill "$central_pid"; wait "$central_pid" 2>/dev/null || true
rm -f "$scratch/port"
"$central" --listen 127.0.0.1:0 --out "$scratch/out-throttled" --port-file "$scratch/port" \
  --fail-first 1000000 --fail-status 429 --retry-after 30 >>"$scratch/central.log" 2>&1 &
central_pid=$!
for _ in $(seq 200); do [[ -s $scratch/port ]] && break; sleep 0.05; done
sed -i "s#127.0.0.1:$port/#127.0.0.1:$(cat "$scratch/port")/#" "$scratch/collectd.conf"
ms=$(run_collectd 4)
grep -q 'forward.backpressure' "$scratch/collectd.log" || { echo "FAIL: no 429 seen" >&2; exit 1; }
echo "throttled run: stopped ${ms} ms after SIGTERM (in a 30 s Retry-After pause)"
((ms < 3000)) || { echo "FAIL: collectd took ${ms} ms to stop while throttled" >&2; exit 1; }
echo ok
