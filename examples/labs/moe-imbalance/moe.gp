# moe.gp - the router-skew sweep against its closed form. Run from this folder (run.sh does):
# gnuplot moe.gp. Columns are read by name from results/results.csv.
set datafile separator ','
set datafile columnheaders
set terminal pngcairo size 1000,470 noenhanced font 'Sans,10'
set output 'moe.png'
set multiplot layout 1,2 title 'Mixtral-style MoE layers, expert parallel 8 in one DGX H100: dtsim (points) against the closed form (lines)'
set grid
ms(c) = 1e3*column(c)
# One expert per GPU: the busiest takes E / H(E, s) of the mean (H: generalised harmonic number),
# at most the capacity factor. Its extra time per MoE layer and microbatch is (max - 1) x 3 Tx
# (forward Tx, backward 2 Tx), Tx = 2 b s (3 h f) k / (989.5 TFLOP/s x 0.7) = 4.167 ms.
E = 8; L = 8; m = 2
Tx = 2*4096.0*3*4096*14336*2/(989.5e12*0.7)*1e3
H(s) = sum [i=1:8] i**(-s)
mx(s) = E/H(s)
T0 = 327.1429724
set title '(a) step time'
set xlabel 'router Zipf exponent s'
set ylabel 'step time (ms)'
set key top left Left reverse
set xrange [-0.05:2.05]
set yrange [0:1300]
set samples 200
plot (x < 0 ? 1/0 : T0 + m*L*3*Tx*(mx(x)-1)) w l lw 1.5 lc rgb '#ee6677' title 'dropless: T0 + m L 3 Tx (E/H(E,s) - 1)', \
     (x < 0 ? 1/0 : T0 + m*L*3*Tx*((mx(x) < 1.25 ? mx(x) : 1.25)-1)) w l lw 1.5 lc rgb '#4477aa' title 'capacity 1.25: max load capped', \
     'results/results.csv' u (column('model.capacity_factor')==0 ? column('model.router_zipf') : NaN):(ms('step_time_s')) w p pt 7 lc rgb '#ee6677' title 'dtsim, dropless', \
     '' u (column('model.capacity_factor')>0 ? column('model.router_zipf') : NaN):(ms('step_time_s')) w p pt 6 ps 1.5 lc rgb '#4477aa' title 'dtsim, capacity 1.25'
set title '(b) where the time goes (dropless)'
set ylabel 'share of the step'
set yrange [0:1]
set key top right
plot 'results/results.csv' u (column('model.capacity_factor')==0 ? column('model.router_zipf') : NaN):(column('compute_s')/column('step_time_s')) w p pt 7 lc rgb '#4477aa' title 'compute', \
     '' u (column('model.capacity_factor')==0 ? column('model.router_zipf') : NaN):(column('straggler_wait_s')/column('step_time_s')) w p pt 7 lc rgb '#aa3377' title 'waiting for the busiest expert', \
     '' u (column('model.capacity_factor')==0 ? column('model.router_zipf') : NaN):(column('comm_exposed_s')/column('step_time_s')) w p pt 7 lc rgb '#ee6677' title 'exposed communication (EP + DP)'
unset multiplot
