# federated.gp - time for 100 local steps of 50 clients against the wide-area bandwidth, four
# ways to aggregate. Run from this folder (run.sh does): gnuplot federated.gp. Data: wan.dat.
set terminal pngcairo size 900,560 noenhanced font 'Sans,10'
set output 'federated.png'
set title '50 clients in 5 sites, 100 local steps each (dtsim federated)'
set xlabel 'wide-area bandwidth per site (Gb/s)'
set ylabel 'time for 100 local steps (s)'
set logscale xy
set grid
set key top right
plot 'wan.dat' u 1:3 w lp pt 7 lw 1.5 lc rgb '#ee6677' title 'flat PS, every 5 steps', \
     '' u 1:5 w lp pt 5 lw 1.5 lc rgb '#228833' title 'ring all-reduce, every 5 steps', \
     '' u 1:4 w lp pt 9 lw 1.5 lc rgb '#ccbb44' title 'flat PS, every 20 steps', \
     '' u 1:2 w lp pt 7 lw 2 lc rgb '#4477aa' title 'hierarchical: edge every 5, cloud every 20', \
     5.49 w l dt 2 lc rgb '#888888' title 'compute alone (100 x 54.9 ms)'
