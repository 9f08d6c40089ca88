# goodput.gp - written by `dtsim report`; edit and run `gnuplot goodput.gp` to restyle.
set terminal pngcairo size 900,560 noenhanced font 'Sans,10'
set output 'goodput.png'
set title 'Goodput vs checkpoint interval' . "\n" . 'goodput.csv'
set key outside right top
set grid ytics
set logscale x
set key inside right bottom
set xlabel 'checkpoint interval (training time between checkpoints, h, log scale)'
set ylabel 'goodput (% of wall-clock time training kept work)'
set arrow from 0.2471501357, graph 0 to 0.2471501357, graph 1 nohead dt 3 lc rgb '#555555'
set label 'Young' at 0.2471501357, graph 0.06 offset 0.5,0
set arrow from 0.2467388143, graph 0 to 0.2467388143, graph 1 nohead dt 3 lc rgb '#555555'
set label 'Daly' at 0.2467388143, graph 0.12 offset 0.5,0
set arrow from 0.2473626162, graph 0 to 0.2473626162, graph 1 nohead dt 1 lc rgb '#cc0000'
set label 'best' at 0.2473626162, graph 0.18 offset 0.5,0
plot 'goodput.dat' using 1:3:4 with filledcurves lc rgb '#cfe2f3' title '95% confidence', \
     '' using 1:2 with linespoints lw 2 pt 7 ps 0.6 lc rgb '#1f4e79' title 'simulated (mean of runs)', \
     '' using 1:5 with lines dt 2 lw 1.5 lc rgb '#000000' title 'renewal formula (exponential)'
set terminal svg size 900,560 dynamic noenhanced font 'Sans,10'
set output 'goodput.svg'
replot
unset output
