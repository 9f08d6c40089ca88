# Step time against link bandwidth, without compression and with 8-bit and 1-bit quantisation
# (simulated points), top-k through parameter servers and PowerSGD, and the closed-form break-even bandwidths B* = (d-1)/d (e - b/8) theta.
set terminal pngcairo size 900,560 font ",11"
set output "break-even.png"
set datafile separator ","
set title "When gradient compression pays: GPT 350M, 8 H100s, data parallel (lab compression-break-even)"
set logscale xy
set xlabel "link bandwidth per GPU (Gb/s)"
set ylabel "step time (ms)"
set grid
set key bottom left
set xrange [0.8:1300]
set arrow from 70, graph 0 to 70, graph 1 nohead dt 2 lc rgb "#1f77b4"
set arrow from 131.25, graph 0 to 131.25, graph 1 nohead dt 2 lc rgb "#d62728"
set label "int8 pays below 70 Gb/s" at 72, graph 0.92 tc rgb "#1f77b4"
set label "1-bit pays below 131 Gb/s" at 135, graph 0.85 tc rgb "#d62728"
# top-k 1 % through 8 parameter servers: B* = (d-1)/d (2e - r(4+e) - min(u(4+e), e)) theta,
# u = 1 - (1-r)^d (README); PowerSGD rank 4 pays up to 1.9 Tb/s, off this plot
set arrow from 243.35, graph 0 to 243.35, graph 1 nohead dt 2 lc rgb "#2ca02c"
set label "top-k 1 % via PS pays below 243 Gb/s" at 235, graph 0.78 right tc rgb "#2ca02c"
plot "results-base/results.csv" every ::1 using ($2*8/1e9):($4*1e3) with linespoints pt 7 lc rgb "black" title "no compression (bf16)", \
     "results-int8/results.csv" every ::1 using ($2*8/1e9):($4*1e3) with linespoints pt 5 lc rgb "#1f77b4" title "int8 + error feedback", \
     "results-onebit/results.csv" every ::1 using ($2*8/1e9):($4*1e3) with linespoints pt 9 lc rgb "#d62728" title "1-bit + error feedback", \
     "results-topk-ps/results.csv" every ::1 using ($2*8/1e9):($4*1e3) with linespoints pt 11 lc rgb "#2ca02c" title "top-k 1 % via 8 parameter servers", \
     "results-powersgd/results.csv" every ::1 using ($2*8/1e9):($4*1e3) with linespoints pt 13 lc rgb "#9467bd" title "PowerSGD rank 4"
