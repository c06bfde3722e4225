# SPDX-License-Identifier: Apache-2.0
# The benchmark plots (tests/bench/run.sh --plot DIR; LLP 0030#plots). Reads the series
# run.sh wrote into `dir` and writes goodput.png and inflight.png beside them:
#   gnuplot -e "dir='DIR'; rate=8.0; parts='8 x 8 MiB'" tests/bench/plots.gp
set terminal pngcairo size 800,420 font "DejaVu Sans,10" noenhanced
set grid lc rgb "#dddddd"
set key top right box opaque

set output dir."/goodput.png"
set title sprintf("Goodput through a %.0f MB/s token bucket (burst 2 MB, 256 KiB chunks, identity)", rate)
set xlabel "seconds since the first request"
set ylabel "accepted MB/s (1 s bins)"
set yrange [0:rate * 1.6]
plot rate with lines dt 2 lc rgb "#888888" title "the bucket's rate", \
     dir."/goodput-advertised.dat" using 1:2 with steps lw 2 lc rgb "#1b9e77" title "advertised (--ratelimit-headers)", \
     dir."/goodput-learned.dat" using 1:2 with steps lw 2 lc rgb "#d95f02" title "learned (no headers)", \
     dir."/goodput-off.dat" using 1:2 with steps lw 1 lc rgb "#7570b3" title "--pacing off"

set output dir."/inflight.png"
set title "Requests in flight, ".parts." zstd, 100 ms added round trip, --concurrency adaptive"
set xlabel "seconds since the start (stats every 50 ms)"
set ylabel "requests"
set key top left
set autoscale y
stats dir."/inflight.dat" using 3 nooutput
set yrange [0:STATS_max * 1.2 + 1]
plot dir."/inflight.dat" using 1:3 with steps lw 2 lc rgb "#888888" title "the limit (concurrency_limit)", \
     dir."/inflight.dat" using 1:2 with steps lw 2 lc rgb "#d95f02" title "in flight (requests_in_flight)"
