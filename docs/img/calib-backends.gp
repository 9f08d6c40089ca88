# All-reduce on 2 ranks of this machine by three transports: measured medians (points) and the
# fitted alpha-beta lines. Data: calib-backends.dat (from calib-backends.sh). Run from the source root.
set terminal pngcairo size 900,560 font "DejaVu Sans,11"
set output "docs/img/calib-backends.png"
set title "dtsim calibrate: all-reduce, 2 ranks, fp32, on this 2-core VM"
set logscale xy
set xlabel "buffer per rank"
set ylabel "time"
set format y "%.0s%cs"
set grid
set key top left
set xtics ("4K" 4096, "16K" 16384, "64K" 65536, "256K" 262144, "1M" 1048576, "4M" 4194304)
plot "docs/img/calib-backends.dat" using 1:2 with points pt 7 lc rgb "#1f77b4" title "cpu threads (ring)", \
     "" using 1:3 with lines lw 2 lc rgb "#1f77b4" notitle, \
     "" using 1:4 with points pt 5 lc rgb "#d62728" title "tcp processes (tcp\\_ring)", \
     "" using 1:5 with lines lw 2 lc rgb "#d62728" notitle, \
     "" using 1:6 with points pt 9 lc rgb "#2ca02c" title "MPI reduce-scatter + all-gather", \
     "" using 1:7 with lines lw 2 lc rgb "#2ca02c" notitle, \
     "" using 1:8 with points pt 13 lc rgb "#9467bd" title "MPI\\_Allreduce", \
     "" using 1:9 with lines lw 2 lc rgb "#9467bd" notitle
