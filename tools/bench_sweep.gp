# tools/bench_sweep.gp: one sweep of tools/bench-sweep as a plot.
# gnuplot -e "csv='bench-out/sweep/backlog.csv'; png='....png'; xlabel='backlog'" tools/bench_sweep.gp
# Drain sweeps (columns: x, msgs/s, mysqld us/msg, msgqd us/msg, RSS MiB,
# lost, duplicates, ack p50 ms, ack p99 ms): throughput (msgs/s); CPU
# microseconds per message (mysqld, msgqd) and msgqd peak RSS (MiB); the
# subscribers' ack round trip (p50, p99; log scale).
# With sustained=1 (the tables sweep; columns: x, offered/s, committed/s,
# msgs/s delivered, p50 ms, p99 ms, mysqld us/msg, msgqd us/msg, RSS MiB):
# throughput offered, committed and delivered, latency from commit to
# receipt (p50, p99; log scale), and the same costs. The x axis is
# logarithmic.
if (!exists("sustained")) sustained = 0
set datafile separator ','
set logscale x
set xlabel xlabel
set grid
if (sustained) {
  set terminal pngcairo size 1500,420 font ',10'
  set output png
  set multiplot layout 1,3 title 'msgq sustained load as '.xlabel.' grow (same total rate)'
  set key bottom right
  set ylabel 'msgs/s'
  set yrange [0:*]
  set offsets 0, 0, graph 0.1, 0
  plot csv using 1:4 skip 1 with linespoints lw 2 title 'delivered', \
       csv using 1:3 skip 1 with linespoints lw 1 dt 3 title 'committed', \
       csv using 1:2 skip 1 with lines dt 2 lw 2 title 'offered'
  set offsets 0, 0, 0, 0
  set key top left
  set ylabel 'ms (commit -> receipt)'
  set logscale y
  set yrange [*:*]
  plot csv using 1:5 skip 1 with linespoints lw 2 title 'p50', \
       csv using 1:6 skip 1 with linespoints lw 2 title 'p99'
  unset logscale y
  set yrange [0:*]
  set ylabel 'us per message  /  MiB'
  plot csv using 1:7 skip 1 with linespoints lw 2 title 'mysqld CPU us/msg', \
       csv using 1:8 skip 1 with linespoints lw 2 title 'msgqd CPU us/msg', \
       csv using 1:9 skip 1 with linespoints lw 2 dt 2 title 'msgqd peak RSS MiB'
  unset multiplot
} else {
  set terminal pngcairo size 1500,420 font ',10'
  set output png
  set multiplot layout 1,3 title 'msgq drain as '.xlabel.' grows'
  set key top right
  set ylabel 'msgs/s'
  set yrange [0:*]
  plot csv using 1:2 skip 1 with linespoints lw 2 title 'throughput'
  set key top left
  set ylabel 'us per message  /  MiB'
  set offsets 0, 0, graph 0.3, 0  # room above the lines for the key
  plot csv using 1:3 skip 1 with linespoints lw 2 title 'mysqld CPU us/msg', \
       csv using 1:4 skip 1 with linespoints lw 2 title 'msgqd CPU us/msg', \
       csv using 1:5 skip 1 with linespoints lw 2 dt 2 title 'msgqd peak RSS MiB'
  set offsets 0, 0, 0, 0
  set ylabel 'ms (MessageAck round trip)'
  set logscale y
  set yrange [*:*]
  plot csv using 1:8 skip 1 with linespoints lw 2 title 'ack p50', \
       csv using 1:9 skip 1 with linespoints lw 2 title 'ack p99'
  unset multiplot
}
