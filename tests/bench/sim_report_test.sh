#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The simulator's finish_floor (LLP 0016#frontier): the least last / first finish that
# any sharing after the first finish could give, the whole backlog at the rate over the
# first finish. A lone sender's floor is 1 / its drain ratio (its first finish is its
# last); a fleet's floor never exceeds its measured finish ratio, and one that shared
# unequally (figure 11e, seed 1) has a floor above 1.
#
#   bash tests/bench/sim_report_test.sh SIM
set -euo pipefail
S=${1:?usage: sim_report_test.sh SIM}
b9=(--unit bytes --rate 8000000 --burst 2000000 --chunk-bytes 262144 --retry-after bucket
    --outage-s 0 --jitter 0.5 --pacing on)
get() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
fail() { echo "sim_report_test: $*" >&2; exit 1; }

lone=$("$S" --senders 1 --chunks 256 "${b9[@]}" --seed 1)
floor=$(get finish_floor "$lone") ratio=$(get drain_ratio "$lone")
[[ -n $floor && -n $ratio ]] || fail "no finish_floor or drain_ratio in: $lone"
awk -v f="$floor" -v r="$ratio" 'BEGIN { d = f * r - 1; exit !(d < 0.01 && d > -0.01) }' ||
  fail "a lone sender's floor $floor is not 1 / its drain ratio $ratio"

for seed in 1 2 3; do
  fleet=$("$S" --senders 4 --chunks 120 "${b9[@]}" --seed "$seed")
  floor=$(get finish_floor "$fleet") ratio=$(get finish_ratio "$fleet")
  awk -v f="$floor" -v r="$ratio" 'BEGIN { exit !(f <= r + 0.001) }' ||
    fail "seed $seed: floor $floor above the finish ratio $ratio"
  if ((seed == 1)); then
    awk -v f="$floor" 'BEGIN { exit !(f > 1.05) }' ||
      fail "seed 1 shared unequally (finish ratio $ratio), yet its floor is $floor"
  fi
done
echo "sim_report_test: ok"
