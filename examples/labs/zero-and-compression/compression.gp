# compression.gp - top-k compression (results-topk/results.csv) against no compression
# (results-base/results.csv). Run from this folder: gnuplot compression.gp.
set datafile separator ','
set datafile columnheaders
set terminal pngcairo size 900,560 noenhanced font 'Sans,10'
set output 'compression.png'
set title "Top-k gradient compression, 1.3B GPT on 32 H100s (4 boxes): step time against the ratio kept\n(selection at 2e10 elements/s, the default, or 2e11; dashed: no compression)"
set xlabel 'top-k ratio r (fraction of gradient elements sent)'
set ylabel 'step time (ms)'
set logscale xy
set xrange [0.0008:0.06]
set yrange [40:1200]
set grid
set key top left Left reverse
# Baselines (no compression) from results-base: row 1 = 100 Gb/s, row 2 = 400 Gb/s.
stats 'results-base/results.csv' u (column('step_time_s')*1e3) every ::0::0 nooutput
b100 = STATS_min
stats 'results-base/results.csv' u (column('step_time_s')*1e3) every ::1::1 nooutput
b400 = STATS_min
# Break-even traffic: hierarchical all-reduce puts 2(n-1)/n x 2G/8 bytes through each NIC
# (n = 4 boxes of 8), top-k's ring all-gather (d-1) r G (4+2) bytes (d = 32): r* = 0.0020.
rstar = (2*3.0/4 * 2/8) / (31*6)
set arrow from rstar, graph 0 to rstar, graph 1 nohead dt 3 lc rgb 'gray40'
set label sprintf('r* = %.4f: equal NIC traffic', rstar) at rstar*1.08, 44 tc rgb 'gray30'
sel(bw, tp) = (strcol('topology.bandwidth') eq bw && column('parallel.compression.throughput') == tp) ? 1 : NaN
plot b100 w l dt 2 lw 1.5 lc rgb '#ee6677' title sprintf('100 Gb/s, no compression (%.1f ms)', b100), \
     b400 w l dt 2 lw 1.5 lc rgb '#4477aa' title sprintf('400 Gb/s, no compression (%.1f ms)', b400), \
     'results-topk/results.csv' u 'parallel.compression.ratio':(column('step_time_s')*1e3*sel('100 Gb/s', 2e10)) w lp pt 6 lc rgb '#ee6677' title '100 Gb/s, top-k at 2e10 /s', \
     '' u 'parallel.compression.ratio':(column('step_time_s')*1e3*sel('100 Gb/s', 2e11)) w lp pt 7 lc rgb '#ee6677' title '100 Gb/s, top-k at 2e11 /s', \
     '' u 'parallel.compression.ratio':(column('step_time_s')*1e3*sel('400 Gb/s', 2e10)) w lp pt 6 lc rgb '#4477aa' title '400 Gb/s, top-k at 2e10 /s', \
     '' u 'parallel.compression.ratio':(column('step_time_s')*1e3*sel('400 Gb/s', 2e11)) w lp pt 7 lc rgb '#4477aa' title '400 Gb/s, top-k at 2e11 /s'
