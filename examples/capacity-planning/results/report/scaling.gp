# scaling.gp - written by `dtsim report`; edit and run `gnuplot scaling.gp` to restyle.
set terminal pngcairo size 900,560 noenhanced font 'Sans,10'
set output 'scaling.png'
set title 'Scaling: throughput and efficiency vs GPUs (plans that fit)' . "\n" . 'scaling sweep: GPT 2.7B on 1 to 16 DGX H100 nodes (scaling-sweep.json)'
set key outside right top
set grid ytics
set logscale x 2
set logscale y 10
set format y '%.0s%c'
set key inside right bottom
set xlabel 'GPUs'
set ylabel 'tokens/s (log scale)'
set y2label 'scaling efficiency (%)'
set y2range [0:110]
set nologscale y2
set ytics nomirror
set y2tics
plot 'scaling.dat' using 1:2 with linespoints lw 2 pt 7 title 'simulated', \
     '' using 1:3 with lines dt 2 lw 1.5 title 'ideal linear', \
     '' using 1:4 axes x1y2 with linespoints pt 5 title 'efficiency (right)'
set terminal svg size 900,560 dynamic noenhanced font 'Sans,10'
set output 'scaling.svg'
replot
unset output
