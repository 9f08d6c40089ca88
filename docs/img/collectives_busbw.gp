# Simulated all-reduce bus bandwidth vs size, 64 GPUs (dgx 8x8), flow model.
# Data: collectives_busbw.dat (from collectives_busbw.sh). Run from the source root.
set terminal pngcairo size 900,560 font "DejaVu Sans,11"
set output "docs/img/collectives_busbw.png"
set title "dtsim: all-reduce busbw on 64 GPUs (8 DGX boxes x 8, 450 GB/s NVLink, 50 GB/s NIC/GPU)"
set logscale x 2
set xlabel "size per rank"
set ylabel "busbw (GB/s)"
set grid
set key top left
set xtics ("1K" 1024, "16K" 16384, "256K" 262144, "4M" 4194304, "64M" 67108864, "1G" 1073741824)
plot "docs/img/collectives_busbw.dat" using 1:2 with linespoints title "ring", \
     "" using 1:3 with linespoints title "tree", \
     "" using 1:4 with linespoints title "hd", \
     "" using 1:5 with linespoints title "hier"
