#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The learned controller's regression sweep on the simulator (LLP 0016#controller):
# 5-seed means of one sender on figure 9's byte bucket (33 s and 67 s at the limit),
# figure 3's bucket, nginx's 20 r/s (32 s and 64 s), and 4 and 16 daemons on figure
# 11's bucket (aggregate goodput and Jain's index over the window every one was sending),
# and a fleet that changes on figure 9's bucket (LLP 0016#fleet): 11c, backlogs of 1x,
# 1.5x, 2x, 3x (~31 s and ~63 s in all: goodput over the whole drain, Jain while all
# four send), 11e, four equal backlogs (the same, and the last over the first finish,
# with its floor: the whole backlog at the rate over the first finish, LLP 0016#frontier),
# 11d, a daemon joining three after 20 s (its share 25-30 s later over a fair share).
# PACING_SWEEP_SEEDS=20 for more seeds (default 5; min and max are printed too).
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
seeds=${PACING_SWEEP_SEEDS:-5}
b9="--unit bytes --rate 8000000 --burst 2000000 --chunk-bytes 262144 --retry-after bucket"
declare -A figure=(
  [f9]="--senders 1 --chunks 1024 --unit bytes --rate 8000000 --burst 2000000 --chunk-bytes 262144 --retry-after bucket"
  [f9l]="--senders 1 --chunks 2048 --unit bytes --rate 8000000 --burst 2000000 --chunk-bytes 262144 --retry-after bucket"
  [f3]="--senders 1 --chunks 800 --unit bytes --rate 1048576 --burst 4194304 --chunk-bytes 262144 --retry-after bucket"
  [ng]="--senders 1 --chunks 640 --unit requests --rate 20 --burst 6 --chunk-bytes 65536 --retry-after 1"
  [ngl]="--senders 1 --chunks 1280 --unit requests --rate 20 --burst 6 --chunk-bytes 65536 --retry-after 1"
  [fl4]="--senders 4 --chunks 544 --unit bytes --rate 4000000 --burst 1000000 --chunk-bytes 65536 --retry-after bucket"
  [fl16]="--senders 16 --chunks 136 --unit bytes --rate 4000000 --burst 1000000 --chunk-bytes 65536 --retry-after bucket"
  [fl16l]="--senders 16 --chunks 272 --unit bytes --rate 4000000 --burst 1000000 --chunk-bytes 65536 --retry-after bucket"
  [fc11]="--senders 4 --chunks 128 --backlogs 1,1.5,2,3 $b9"
  [fc11l]="--senders 4 --chunks 256 --backlogs 1,1.5,2,3 $b9"
  [fe11]="--senders 4 --chunks 240 $b9"
  [fe11l]="--senders 4 --chunks 480 $b9"
  [fd11]="--senders 4 --chunks 768 --backlogs 1,1,1,0.5 --join-s 20 $b9"
)
for f in f9 f9l f3 ng ngl fl4 fl16 fl16l fc11 fc11l fe11 fe11l fd11; do
  for ((seed = 1; seed <= seeds; seed++)); do
    # shellcheck disable=SC2086
    "$S" ${figure[$f]} "${common[@]}" --seed "$seed" "$@"
  done | awk -v f="$f" '
    { for (i = 1; i <= NF; i++) {
        split($i, kv, "="); k = kv[1]; x = kv[2] + 0; v[k] += x
        if (!(k in lo) || x < lo[k]) lo[k] = x
        if (!(k in hi) || x > hi[k]) hi[k] = x
      } n++ }
    END {
      if (f ~ /^fl/) printf "%-6s fleet_goodput=%.3f jain=%.3f (min %.3f) window_s=%.1f refused=%.1f\n", f, v["fleet_goodput"]/n, v["jain"]/n, lo["jain"], v["fleet_window_s"]/n, v["refused"]/n
      else if (f ~ /^fc/) printf "%-6s drain_goodput=%.3f (min %.3f) jain=%.3f (min %.3f) refused=%.1f\n", f, v["drain_goodput"]/n, lo["drain_goodput"], v["jain"]/n, lo["jain"], v["refused"]/n
      else if (f ~ /^fe/) printf "%-6s drain_goodput=%.3f (min %.3f) finish_ratio=%.3f (max %.3f) floor=%.3f refused=%.1f\n", f, v["drain_goodput"]/n, lo["drain_goodput"], v["finish_ratio"]/n, hi["finish_ratio"], v["finish_floor"]/n, v["refused"]/n
      else if (f ~ /^fd/) printf "%-6s join_share=%.3f (min %.3f) refused=%.1f\n", f, v["join_share"]/n, lo["join_share"], v["refused"]/n
      else printf "%-6s refused=%.1f goodput=%.3f drain_ratio=%.3f\n", f, v["refused"]/n, v["goodput"]/n, v["drain_ratio"]/n
    }'
done
