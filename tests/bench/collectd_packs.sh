#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Requests per partition for a daemon that seals one small partition a second: Debian's
# collectd with write_fwdsink (cpu, memory and load at Interval 1, SealInterval 1) against
# fwdsink-central for SECONDS, once with `Property "pack_linger" LINGER` and once with
# `Property "pack_below" "0"` (one request per partition, the baseline). Prints one line
# per run: "<label> partitions=N requests=M per_partition=R". Used by run.sh (figure 7d).
# Usage: collectd_packs.sh PLUGIN_SO CENTRAL_BIN SCRATCH_DIR SECONDS LINGER
#                                                                  @ref LLP 0027#figures
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../collectd/conf.sh"
plugin=$1 central=$2 scratch=$3 seconds=$4 linger=$5
collectd=$(command -v collectd || echo /usr/sbin/collectd)
[[ -x $collectd && -f /usr/lib/collectd/cpu.so ]] || { echo "collectd_packs: collectd is not installed" >&2; exit 77; }
[[ -f $plugin ]] || { echo "collectd_packs: no plugin at $plugin" >&2; exit 77; }

central_pid="" collectd_pid=""
cleanup() {
  [[ -n $collectd_pid ]] && kill -KILL "$collectd_pid" 2>/dev/null || true
  [[ -n $central_pid ]] && kill "$central_pid" 2>/dev/null || true
}
trap cleanup EXIT

one_run() {  # one_run LABEL PROPERTY VALUE
  local label=$1 key=$2 value=$3 d=$scratch/$1
  rm -rf "$d" && mkdir -p "$d"/{plugins,out,base}
  for p in cpu memory load logfile; do cp "/usr/lib/collectd/$p.so" "$d/plugins/"; done
  cp "$plugin" "$d/plugins/write_fwdsink.so"  # collectd refuses symlinks
  "$central" --listen 127.0.0.1:0 --out "$d/out" --port-file "$d/port" \
             --request-log "$d/requests.ndjson" >"$d/central.log" 2>&1 &
  central_pid=$!
  for _ in $(seq 200); do [[ -s $d/port ]] && break; sleep 0.05; done
  [[ -s $d/port ]] || { echo "collectd_packs: the receiver did not start" >&2; exit 1; }
  collectd_conf "$d" "$(cat "$d/port")" "Property \"$key\" \"$value\"" 'SealInterval 1'
  "$collectd" -f -C "$d/collectd.conf" >"$d/collectd.stdout" 2>&1 &
  collectd_pid=$!
  sleep "$seconds"
  kill -TERM "$collectd_pid"
  wait "$collectd_pid" || true
  collectd_pid=""
  kill "$central_pid"; wait "$central_pid" 2>/dev/null || true
  central_pid=""
  local parts reqs
  parts=$(grep -c '"event":"forward.delivered"' "$d/collectd.log" || true)
  reqs=$(wc -l <"$d/requests.ndjson")
  ((parts > 0)) || { echo "collectd_packs: $label delivered nothing" >&2; tail -5 "$d/collectd.log" >&2; exit 1; }
  echo "$label partitions=$parts requests=$reqs per_partition=$(awk -v r="$reqs" -v p="$parts" 'BEGIN {printf "%.2f", r / p}')"
}

one_run linger pack_linger "$linger"
one_run alone pack_below 0
