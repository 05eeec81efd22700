# bench.gp: bench.png, the chart of a msgq-bench run, from its timeseries.csv.
# msgq-bench runs it after each run (unless --plot=false); by hand:
#   gnuplot -c tools/msgq_bench/bench.gp OUT/timeseries.csv OUT/bench.png \
#     'TITLE' MESSAGES 'DRAIN_PHASES' SUSTAINED
# DRAIN_PHASES: the drain phases to draw, space-separated ("relay msgq_b100");
# SUSTAINED: 1 to draw the sustained phase, 0 not to.
# timeseries.csv columns: 1 phase, 2 t_s, 3 dt_s, 4 delivered_per_s,
# 5 acked_per_s, 6 offered_per_s, 7 backlog, 8 lat_p50_ms, 9 lat_p99_ms,
# 10 lat_max_ms, 11 msgqd_rss_mib, 12 msgqd_cpu_pct.
csv = ARG1
drains = ARG5
sustained = (ARG6 eq '1')
# msgqd does not run during the relay phase: no RSS or CPU to draw.
msgq_drains = ''
do for [ph in drains] {
  if (ph ne 'relay') { msgq_drains = msgq_drains . ' ' . ph }
}
panels = (words(drains) > 0 ? 2 : 0) + (sustained ? 2 : 0)
if (panels == 0) { exit }
# Column `col` on the rows of phase `ph`, NaN (not drawn) on the others.
sel(ph, col) = (strcol(1) eq ph ? column(col) : NaN)

set terminal pngcairo size 1400, panels * 330 font 'sans,10' noenhanced
set output ARG2
set datafile separator ','
set key outside right
set grid
set multiplot layout panels, 1 title ARG3
if (words(drains) > 0) {
  set title 'Drain of ' . ARG4 . ' messages: throughput (msgq: first receipts/s; relay: rows relayed/s)'
  set xlabel 's since first delivery'
  set ylabel 'msgs/s'
  unset logscale y
  set yrange [0:*]
  plot for [ph in drains] csv using (sel(ph, 2)):(sel(ph, 4)) \
    with linespoints title ph
  set title 'msgqd during the drains: RSS (MiB, left) and CPU (% of one core, right)'
  set ylabel 'MiB'
  set y2label 'CPU %'
  set y2tics
  set y2range [0:*]
  if (words(msgq_drains) > 0) {
    plot for [ph in msgq_drains] csv using (sel(ph, 2)):(sel(ph, 11)) \
           with lines title 'RSS ' . ph, \
         for [ph in msgq_drains] csv using (sel(ph, 2)):(sel(ph, 12)) \
           axes x1y2 with lines dashtype 2 title 'CPU ' . ph
  } else {
    set multiplot next
  }
  unset y2tics
  unset y2label
}
if (sustained) {
  s = 'sustained'
  set title 'Sustained: offered (commits/s) vs delivered/s'
  set xlabel 's since producers started'
  set ylabel 'msgs/s'
  unset logscale y
  set yrange [0:*]
  plot csv using (sel(s, 2)):(sel(s, 6)) with lines title 'offered', \
       csv using (sel(s, 2)):(sel(s, 4)) with lines title 'delivered', \
       csv using (sel(s, 2)):(sel(s, 5)) with lines title 'acked'
  set title 'Sustained: commit-to-receipt latency of the messages received each interval (ms, log scale)'
  set ylabel 'ms'
  set yrange [*:*]
  set logscale y
  plot csv using (sel(s, 2)):(sel(s, 8)) with linespoints title 'p50', \
       csv using (sel(s, 2)):(sel(s, 9)) with linespoints title 'p99', \
       csv using (sel(s, 2)):(sel(s, 10)) with linespoints title 'max'
}
unset multiplot
