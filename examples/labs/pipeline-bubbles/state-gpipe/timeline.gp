# timeline.gp - written by `dtsim report`; edit and run `gnuplot timeline.gp` to restyle.
set terminal pngcairo size 900,560 noenhanced font 'Sans,10'
set output 'timeline.png'
set title "Per-GPU state over one step: gpipe, p = 4 stages, m = 8 microbatches"
set key outside right top
set grid ytics
set xlabel 'time (ms)'
set xrange [0:264]
set yrange [4-0.5:-0.5]
set key outside right top
unset grid
set ytics ('GPU 0' 0, 'GPU 1' 1, 'GPU 2' 2, 'GPU 3' 3) font ',8'
plot 'timeline.dat' using (($2+$3)/2):1:(($3-$2)/2):(0.4):4 with boxxyerror fs solid 1.0 noborder lc rgb variable notitle, \
     NaN with boxes fs solid 1.0 lc rgb '#4477aa' title 'compute', \
     NaN with boxes fs solid 1.0 lc rgb '#dddddd' title 'idle'
set terminal svg size 900,560 dynamic noenhanced font 'Sans,10'
set output 'timeline.svg'
replot
unset output
