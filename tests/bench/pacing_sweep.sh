#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The learned controller's regression sweep on the simulator (LLP 0016#controller):
# 5-seed means of one sender on figure 9's byte bucket (33 s and 67 s at the limit),
# figure 3's bucket, nginx's 20 r/s (32 s and 64 s), and 4 and 16 daemons on figure
# 11's bucket (aggregate goodput and Jain's index over the window every one was sending).
#
#   bash tests/bench/pacing_sweep.sh [SIM [EXTRA SIM FLAGS...]]
#   bash tests/bench/pacing_sweep.sh build-bench/tests/bench/fwdsink-bench-pacing-sim --decrease 0.9
#
# Deterministic (a fake clock); a run takes a few seconds.
set -euo pipefail
S=${1:-build-bench/tests/bench/fwdsink-bench-pacing-sim}
shift || true
[[ -x $S ]] || { echo "pacing_sweep: no simulator at $S" >&2; exit 66; }
common=(--outage-s 0 --jitter 0.5 --pacing on)
declare -A figure=(
  [f9]="--senders 1 --chunks 1024 --unit bytes --rate 8000000 --burst 2000000 --chunk-bytes 262144 --retry-after bucket"
  [f9l]="--senders 1 --chunks 2048 --unit bytes --rate 8000000 --burst 2000000 --chunk-bytes 262144 --retry-after bucket"
  [f3]="--senders 1 --chunks 800 --unit bytes --rate 1048576 --burst 4194304 --chunk-bytes 262144 --retry-after bucket"
  [ng]="--senders 1 --chunks 640 --unit requests --rate 20 --burst 6 --chunk-bytes 65536 --retry-after 1"
  [ngl]="--senders 1 --chunks 1280 --unit requests --rate 20 --burst 6 --chunk-bytes 65536 --retry-after 1"
  [fl4]="--senders 4 --chunks 544 --unit bytes --rate 4000000 --burst 1000000 --chunk-bytes 65536 --retry-after bucket"
  [fl16]="--senders 16 --chunks 136 --unit bytes --rate 4000000 --burst 1000000 --chunk-bytes 65536 --retry-after bucket"
  [fl16l]="--senders 16 --chunks 272 --unit bytes --rate 4000000 --burst 1000000 --chunk-bytes 65536 --retry-after bucket"
)
for f in f9 f9l f3 ng ngl fl4 fl16 fl16l; do
  for seed in 1 2 3 4 5; do
    # shellcheck disable=SC2086
    "$S" ${figure[$f]} "${common[@]}" --seed "$seed" "$@"
  done | awk -v f="$f" '
    { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] += kv[2] } n++ }
    END {
      if (f ~ /^fl/) printf "%-6s fleet_goodput=%.3f jain=%.3f window_s=%.1f\n", f, v["fleet_goodput"]/n, v["jain"]/n, v["fleet_window_s"]/n
      else printf "%-6s refused=%.1f goodput=%.3f drain_ratio=%.3f\n", f, v["refused"]/n, v["goodput"]/n, v["drain_ratio"]/n
    }'
done
