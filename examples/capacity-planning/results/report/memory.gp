# memory.gp - written by `dtsim report`; edit and run `gnuplot memory.gp` to restyle.
set terminal pngcairo size 900,560 noenhanced font 'Sans,10'
set output 'memory.png'
set title 'Peak memory per GPU vs capacity' . "\n" . 'scaling sweep: GPT 2.7B on 1 to 16 DGX H100 nodes (scaling-sweep.json)'
set key outside right top
set grid ytics
set style fill solid 0.8 border -1
set boxwidth 0.7
set offsets 0.6, 0.6, graph 0.08, 0
set ylabel 'GiB per GPU (most loaded GPU)'
set yrange [0:*]
set xtics rotate by -45 left font ',8'
plot 'memory.dat' using 0:($4 > 0 ? $2 : 1/0):xtic(1) with boxes lc rgb '#228833' title 'peak (fits)', \
     '' using 0:($4 > 0 ? 1/0 : $2) with boxes lc rgb '#cc3311' title 'peak (does not fit)', \
     '' using 0:3 with linespoints lw 2 pt 2 lc rgb 'black' title 'GPU capacity'
set xlabel 'nodes / tp'
replot
set terminal svg size 900,560 dynamic noenhanced font 'Sans,10'
set output 'memory.svg'
replot
unset output
