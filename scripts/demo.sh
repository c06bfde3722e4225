#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fwdsink demo: ~100 MB of telemetry forwarded to a throttled receiver on 127.0.0.1.
#
#   bash scripts/demo.sh
#
# Installs the build dependencies (apt-get, needs root or sudo), builds the `fwdsink`
# daemon and the `fwdsink-central` receiver (Release, into build-demo/), generates a
# spool, starts the receiver with a byte-rate throttle smaller than the spool, forwards
# it, and prints what happened: rows generated, delivered and received (equal), stored
# duplicates (0), and each 429 with its wait and the reason the server gave.
# Exits non-zero if any row is missing or stored twice. Parameters: LLP 0022#demo.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build-demo"

SPOOL_BYTES=${SPOOL_BYTES:-100m}   # generated NDJSON (~6.5x smaller on the wire with zstd)
PARTITIONS=${PARTITIONS:-8}
CHUNK_BYTES=${CHUNK_BYTES:-8m}     # ~1.3 MB on the wire per chunk
RATE=${RATE:-300000}               # receiver's token bucket: wire bytes per second ...
BURST=${BURST:-8000000}            # ... and its burst: about half the spool's wire bytes
LADDER=${LADDER:-1,2,4}            # short ladder; the receiver's Retry-After rules anyway
MAX_WAIT=${MAX_WAIT:-10}
DEADLINE_S=${DEADLINE_S:-180}      # give up (and fail) if forwarding takes longer

step() { printf '\n==> %s\n' "$*"; }

step "installing build dependencies (scripts/deps.sh)"
bash "$ROOT/scripts/deps.sh"

step "building fwdsink and fwdsink-central (Release, $BUILD)"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DFWDSINK_TESTS=OFF \
  -DFWDSINK_INSTALL=OFF >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target fwdsink-daemon fwdsink-central >/dev/null
FWDSINK="$BUILD/examples/fwdsink/fwdsink"
CENTRAL="$BUILD/examples/central/fwdsink-central"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/fwdsink-demo.XXXXXX")
CENTRAL_PID=""
FORWARD_PID=""
cleanup() {
  [[ -n "$FORWARD_PID" ]] && kill "$FORWARD_PID" 2>/dev/null || true
  [[ -n "$CENTRAL_PID" ]] && kill "$CENTRAL_PID" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

step "generating $SPOOL_BYTES of telemetry into $WORK/spool ($PARTITIONS partitions)"
ROWS_GENERATED=$("$FWDSINK" generate --spool "$WORK/spool" --bytes "$SPOOL_BYTES" \
  --partitions "$PARTITIONS" --seed 42)

step "starting fwdsink-central on 127.0.0.1 (throttle: $RATE B/s, burst $BURST B)"
"$CENTRAL" --listen 127.0.0.1:0 --out "$WORK/central" --port-file "$WORK/port" \
  --rate "$RATE" --burst "$BURST" >"$WORK/central.log" 2>&1 &
CENTRAL_PID=$!
for _ in $(seq 100); do [[ -s "$WORK/port" ]] && break; sleep 0.1; done
[[ -s "$WORK/port" ]] || { echo "demo: the receiver did not start" >&2; cat "$WORK/central.log" >&2; exit 1; }
PORT=$(cat "$WORK/port")
URL="http://127.0.0.1:$PORT/ingest"

step "fwdsink forward --spool $WORK/spool --url $URL (stopped with SIGTERM once ready/ is empty)"
# A progress line on a terminal, JSON events on stderr otherwise; the JSON log always
# goes to forward.log for the summary below.
START=$(date +%s.%N)
FORWARD=("$FWDSINK" forward --spool "$WORK/spool" --url "$URL" --chunk-bytes "$CHUNK_BYTES"
  --ladder "$LADDER" --max-wait "$MAX_WAIT" --log-file "$WORK/forward.log" --stats-interval 5)
if [[ -t 2 ]]; then
  "${FORWARD[@]}" &
else
  "${FORWARD[@]}" 2>"$WORK/forward.stderr" &
fi
FORWARD_PID=$!
for _ in $(seq $((DEADLINE_S * 10))); do
  if [[ -z $(find "$WORK/spool/ready" -name '*.ndjson' -print -quit) ]]; then break; fi
  kill -0 "$FORWARD_PID" 2>/dev/null || break
  sleep 0.1
done
kill -TERM "$FORWARD_PID" 2>/dev/null || true
FORWARD_RC=0
wait "$FORWARD_PID" || FORWARD_RC=$?
FORWARD_PID=""
END=$(date +%s.%N)

# ---- summary, from the daemon's JSON log and the receiver's files ----
num() {  # num FIELD LINE: an integer field of a flat JSON line
  sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" <<<"$2"
}
EXIT_LINE=$(grep '"event":"daemon.exit"' "$WORK/forward.log" | tail -1)
ROWS_DELIVERED=$(num rows_acked "$EXIT_LINE")
ROWS_RECEIVED=$(wc -l <"$WORK/central/received.ndjson")
UNIQUE_RECEIVED=$(sed -n 's/.*"seq":\([0-9]*\).*/\1/p' "$WORK/central/received.ndjson" | sort -un | wc -l)
DUPLICATES=$((ROWS_RECEIVED - UNIQUE_RECEIVED))
STATS=$(curl -s "http://127.0.0.1:$PORT/stats" || true)

step "summary"
printf '  %-34s %s\n' "forward exit code (SIGTERM)" "$FORWARD_RC"
printf '  %-34s %.1f s\n' "forwarding wall time" "$(echo "$END - $START" | awk '{print $1 - $3}')"
printf '  %-34s %s\n' "rows generated" "$ROWS_GENERATED"
printf '  %-34s %s\n' "rows delivered (daemon counters)" "${ROWS_DELIVERED:-?}"
printf '  %-34s %s\n' "rows received (received.ndjson)" "$ROWS_RECEIVED"
printf '  %-34s %s\n' "duplicate rows stored" "$DUPLICATES"
printf '  %-34s %s\n' "wire bytes sent (zstd, incl. 429s)" "$(num wire_bytes_sent "$EXIT_LINE")"
# Wire body bytes the daemon sent over those the receiver accepted: a refusal that came
# before its body (Expect: 100-continue, LLP 0017#expect-continue) costs none.
ACCEPTED_BYTES=$(num bytes "$STATS")
printf '  %-34s %s\n' "wire bytes / accepted bytes" \
  "$(awk -v w="$(num wire_bytes_sent "$EXIT_LINE")" -v a="${ACCEPTED_BYTES:-0}" \
       'BEGIN { if (a > 0) printf "%.2f", w / a; else print "?" }')"
printf '  %-34s %s\n' "bodies withheld (refused early)" "$(num bodies_withheld "$EXIT_LINE")"
printf '  %-34s %s\n' "429s seen by the daemon" "$(num status_429 "$EXIT_LINE")"
printf '  %-34s %s\n' "receiver stats" "$STATS"
echo
echo "  backpressure events (forward.backpressure): status, reason, wait, source"
grep '"event":"forward.backpressure"' "$WORK/forward.log" | awk '
  {
    status = reason = wait = source = ""
    if (match($0, /"status":[0-9]+/)) status = substr($0, RSTART + 9, RLENGTH - 9)
    if (match($0, /"reason":"[^"]*"/)) reason = substr($0, RSTART + 10, RLENGTH - 11)
    if (match($0, /"wait_ms":[0-9]+/)) wait = substr($0, RSTART + 10, RLENGTH - 10)
    if (match($0, /"wait_source":"[^"]*"/)) source = substr($0, RSTART + 15, RLENGTH - 16)
    if (match($0, /"ts":"[^"]*"/)) ts = substr($0, RSTART + 17, 12)
    printf "    %s  %s %-10s waited %5.1f s  (%s)\n", ts, status, reason, wait / 1000, source
    n++
  }
  END { if (n == 0) print "    (none)" }'
echo
echo "  work dir: $WORK (spool, receiver output, forward.log)"

if [[ "$ROWS_GENERATED" == "${ROWS_DELIVERED:-}" && "$ROWS_GENERATED" == "$ROWS_RECEIVED" &&
      "$DUPLICATES" == 0 && "$FORWARD_RC" == 0 ]]; then
  echo "  OK: every row delivered exactly once."
else
  echo "  FAILED: rows generated, delivered and received differ, or duplicates were stored." >&2
  exit 1
fi
