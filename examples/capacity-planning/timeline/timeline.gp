# timeline.gp - written by `dtsim report`; edit and run `gnuplot timeline.gp` to restyle.
set terminal pngcairo size 900,560 noenhanced font 'Sans,10'
set output 'timeline.png'
set title 'Per-GPU state over one step' . "\n" . 'timeline: the GPT 2.7B of scenario.json on 2 nodes, 4 pipeline stages, one straggler'
set key outside right top
set grid ytics
set xlabel 'time (ms)'
set xrange [0:174.57962]
set yrange [16-0.5:-0.5]
set key outside right top
unset grid
set ytics ('GPU 0' 0, 'GPU 1' 1, 'GPU 2' 2, 'GPU 3' 3, 'GPU 4' 4, 'GPU 5' 5, 'GPU 6' 6, 'GPU 7' 7, 'GPU 8' 8, 'GPU 9' 9, 'GPU 10' 10, 'GPU 11' 11, 'GPU 12' 12, 'GPU 13' 13, 'GPU 14' 14, 'GPU 15' 15) font ',8'
plot 'timeline.dat' using (($2+$3)/2):1:(($3-$2)/2):(0.4):4 with boxxyerror fs solid 1.0 noborder lc rgb variable notitle, \
     NaN with boxes fs solid 1.0 lc rgb '#4477aa' title 'compute', \
     NaN with boxes fs solid 1.0 lc rgb '#ee6677' title 'comm TP', \
     NaN with boxes fs solid 1.0 lc rgb '#66ccee' title 'comm PP', \
     NaN with boxes fs solid 1.0 lc rgb '#ccbb44' title 'comm DP', \
     NaN with boxes fs solid 1.0 lc rgb '#aa3377' title 'wait (peers)', \
     NaN with boxes fs solid 1.0 lc rgb '#dddddd' title 'idle'
set terminal svg size 900,560 dynamic noenhanced font 'Sans,10'
set output 'timeline.svg'
replot
unset output
