# zero.gp - ZeRO stages 0-3 (results-zero/results.csv of zero-sweep.json) against the ZeRO
# memory formulas and the ZeRO-3 traffic bound. Run from this folder: gnuplot zero.gp.
set datafile separator ','
set datafile columnheaders
set terminal pngcairo size 1200,480 noenhanced font 'Sans,10'
set output 'zero.png'
set multiplot layout 1,2 title '13B GPT (Psi = 12.84 B parameters), pure data parallelism on DGX A100 80GB boxes, 200 Gb/s NIC per GPU'
Psi = 12.841057280e9
A = 1.607081984e9; A3 = 2.865455104e9   # activations + buffers (ZeRO-3: + two gathered layers)
GiB = 2.0**30
sel(z) = (column('parallel.zero') == z) ? 1 : NaN
set logscale x 2
set xrange [6:80]
set xtics (8, 16, 32, 64)
set xlabel 'GPUs (data-parallel degree d)'
set grid
# (a) memory: mixed-precision Adam, 2 + 2 + 12 bytes per parameter, partitioned over d.
set title '(a) peak memory per GPU: lines 16Psi, 4Psi+12Psi/d, 2Psi+14Psi/d, 16Psi/d (+ activations)'
set ylabel 'peak memory per GPU (GiB)'
set logscale y
set yrange [4:400]
set key bottom left Left reverse
plot 80 w l lw 2 dt 2 lc rgb 'black' title 'A100 capacity, 80 GiB', \
     (16*Psi + A)/GiB w l lc rgb '#ee6677' notitle, \
     (4*Psi + 12*Psi/x + A)/GiB w l lc rgb '#ccbb44' notitle, \
     (2*Psi + 14*Psi/x + A)/GiB w l lc rgb '#228833' notitle, \
     (16*Psi/x + A3)/GiB w l lc rgb '#4477aa' notitle, \
     'results-zero/results.csv' u 'n_gpus':(column('mem_peak_bytes')/GiB*sel(0)) w p pt 7 ps 1.2 lc rgb '#ee6677' title 'ZeRO-0', \
     '' u 'n_gpus':(column('mem_peak_bytes')/GiB*sel(1)) w p pt 7 ps 1.2 lc rgb '#ccbb44' title 'ZeRO-1', \
     '' u 'n_gpus':(column('mem_peak_bytes')/GiB*sel(2)) w p pt 7 ps 1.2 lc rgb '#228833' title 'ZeRO-2', \
     '' u 'n_gpus':(column('mem_peak_bytes')/GiB*sel(3)) w p pt 7 ps 1.2 lc rgb '#4477aa' title 'ZeRO-3'
# (b) step time (4 microbatches of 1 sequence per GPU, full recomputation).
# ZeRO-3 moves 3 x 2Psi bytes per GPU and microbatch (all-gather for the forward, again for
# the backward, reduce-scatter of the gradients); once the rings leave the box they run one
# per rail, on the box's 8 NICs of 25 GB/s: bound m * 3 * (d-1)/d * 2Psi / (8 x 25 GB/s), and
# through one NIC (a single ring) 8 times that.
set title '(b) step time (solid) and exposed communication (dashed)'
set ylabel 'time (s)'
unset logscale y
set yrange [0:14]
set key top left Left reverse
plot (x > 8 ? 4*3*(x-1)/x*2*Psi/200e9 : NaN) w l lw 1.5 dt 3 lc rgb '#4477aa' title 'ZeRO-3 traffic bound 4 x 3 (d-1)/d x 2Psi / (8 x 25 GB/s)', \
     (x > 8 ? 4*3*(x-1)/x*2*Psi/25e9 : NaN) w l lw 1 dt 4 lc rgb '#999999' title 'the same through one NIC per box (one ring)', \
     for [z=0:3] 'results-zero/results.csv' u 'n_gpus':(column('step_time_s')*sel(z)) w lp pt (z==1?5:7) ps (z==1?1.8:1) lw 1.5 lc rgb word('#ee6677 #ccbb44 #228833 #4477aa', z+1) title (z==0 ? 'ZeRO-0 step (does not fit: hypothetical)' : z==1 ? 'ZeRO-1 step (same as ZeRO-2)' : sprintf('ZeRO-%d step', z)), \
     for [z=0:3] '' u 'n_gpus':(column('comm_exposed_s')*sel(z)) w lp pt 6 dt 2 lc rgb word('#ee6677 #ccbb44 #228833 #4477aa', z+1) notitle
unset multiplot
