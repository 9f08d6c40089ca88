# breakdown.gp - written by `dtsim report`; edit and run `gnuplot breakdown.gp` to restyle.
set terminal pngcairo size 900,560 noenhanced font 'Sans,10'
set output 'breakdown.png'
set title 'Step time breakdown per point' . "\n" . 'scaling sweep: GPT 2.7B on 1 to 16 DGX H100 nodes (scaling-sweep.json)'
set key outside right top
set grid ytics
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.75
set ylabel 'step time (ms)'
set xlabel 'nodes / tp'
set yrange [0:*]
set xtics rotate by -45 left font ',8'
plot 'breakdown.dat' using 2:xtic(1) title 'compute' lc rgb '#4477aa', \
     '' using 3 title 'comm TP' lc rgb '#ee6677', \
     '' using 4 title 'comm PP' lc rgb '#66ccee', \
     '' using 5 title 'comm DP' lc rgb '#ccbb44', \
     '' using 6 title 'comm ZeRO' lc rgb '#228833', \
     '' using 7 title 'pipeline bubble' lc rgb '#bbbbbb', \
     '' using 8 title 'straggler wait' lc rgb '#aa3377'
set terminal svg size 900,560 dynamic noenhanced font 'Sans,10'
set output 'breakdown.svg'
replot
unset output
