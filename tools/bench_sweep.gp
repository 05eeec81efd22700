# tools/bench_sweep.gp: one sweep of tools/bench-sweep as a plot.
# gnuplot -e "csv='bench-out/sweep/backlog.csv'; png='....png'; xlabel='backlog'" tools/bench_sweep.gp
# Left: throughput (msgs/s). Right: CPU microseconds per message (mysqld,
# msgqd) and msgqd peak RSS (MiB). The x axis is logarithmic.
set datafile separator ','
set terminal pngcairo size 1100,420 font ',10'
set output png
set multiplot layout 1,2 title 'msgq drain as '.xlabel.' grows'
set logscale x
set xlabel xlabel
set grid
set key top right
set ylabel 'msgs/s'
set yrange [0:*]
plot csv using 1:2 skip 1 with linespoints lw 2 title 'throughput'
set key top left
set ylabel 'us per message  /  MiB'
plot csv using 1:3 skip 1 with linespoints lw 2 title 'mysqld CPU us/msg', \
     csv using 1:4 skip 1 with linespoints lw 2 title 'msgqd CPU us/msg', \
     csv using 1:5 skip 1 with linespoints lw 2 dt 2 title 'msgqd peak RSS MiB'
unset multiplot
