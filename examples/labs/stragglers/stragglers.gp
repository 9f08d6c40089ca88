# stragglers.gp - the three sweeps of this lab against their expected values. Run from this
# folder (run.sh does): gnuplot stragglers.gp. Columns are read by name from results-*/results.csv.
set datafile separator ','
set datafile columnheaders
set terminal pngcairo size 1400,470 noenhanced font 'Sans,10'
set output 'stragglers.png'
set multiplot layout 1,3 title 'Synchronous data parallelism, 32 H100s: dtsim (points) against the expected values (lines)'
set grid
ms(c) = 1e3*column(c)
# The step of the base case, from the fault-free point of the slowdown sweep (x = 1):
# C = 144 ms forward+backward, T_opt = 12.54 ms Adam step, T_AR = 15.75 ms gradient all-reduce
# (auto: 8 rings per rail). The link sweep pins the rule's hierarchical all-reduce, whose
# fault-free all-reduce is TarL = 20.72 ms (its f = 1 point).
C = 144.0; Topt = 12.537313; Tar = 15.754061; TarL = 20.722623
# (a) one GPU slowed by x: everyone waits for it at the all-reduce.
set title '(a) GPU 5 slowed by x'
set xlabel 'slowdown x of GPU 5'
set ylabel 'time (ms)'
set key top left Left reverse
set xrange [0.95:2.05]
set yrange [0:440]
plot x*(C+Topt)+Tar w l lw 1.5 lc rgb '#4477aa' title 'x (C + T_opt) + T_AR', \
     (x-1)*C w l lw 1.5 lc rgb '#ee6677' title '(x - 1) C', \
     'results-slowdown/results.csv' u 2:(ms('step_time_s')) w p pt 7 lc rgb '#4477aa' title 'step time', \
     '' u 2:(ms('max_straggler_wait_s')) w p pt 7 lc rgb '#ee6677' title 'longest wait of a healthy GPU'
# (b) jitter: the step is the max over 32 GPUs. GPU g's compute before the all-reduce has mean
# C and sd sigma*sF (forward as one 48 ms op, backward as 24 ops of 4 ms: sF = sqrt(48^2+24*4^2)
# ms); the optimizer step after it sd sigma*Topt. E[max of 32 standard normals] = M32.
phi(x) = exp(-x*x/2)/sqrt(2*pi)
M32 = sum [i=0:4000] (-6.0 + i*0.003) * 32*phi(-6.0 + i*0.003)*norm(-6.0 + i*0.003)**31 * 0.003
sF = sqrt(48.0**2 + 24*4.0**2)
set title sprintf('(b) lognormal jitter, 32 seeds per sigma (E[max of 32 N(0,1)] = %.3f)', M32)
set xlabel 'jitter sigma (relative sd of each compute op)'
set ylabel 'step time - fault-free step (ms)'
set key top left Left reverse
set xrange [-0.005:0.105]
set yrange [-1:20]
plot M32*x*(sF+Topt) w l lw 1.5 lc rgb '#4477aa' title sprintf('E[max] sigma (sF + T_opt) = %.0f sigma ms', M32*(sF+Topt)), \
     'results-jitter/results.csv' u 2:(ms('step_time_s')-(C+Topt+Tar)) w p pt 7 ps 0.4 lc rgb '#99bbdd' title 'one seed', \
     '' u 2:(ms('step_time_s')-(C+Topt+Tar)) smooth unique w lp pt 7 lc rgb '#222222' title 'mean over seeds'
# (c) the link from GPU 5 to its NIC at a fraction f of 50 GB/s: the rail-5 ring of the
# hierarchical all-reduce carries 2 (n-1)/n (2.4 GB / 8) = 450 MB per GPU (9 ms at 50 GB/s).
set title '(c) one GPU-NIC link at a fraction f of its bandwidth'
set xlabel '1 / f'
set ylabel 'time (ms)'
set key top left Left reverse
set xrange [0:21]
set yrange [0:480]
plot TarL + 9*(x-1) w l lw 1.5 lc rgb '#ee6677' title 'T_AR + 9 ms (1/f - 1)', \
     C+Topt+TarL + 9*(x-1) w l lw 1.5 lc rgb '#4477aa' title 'step: C + T_opt + T_AR + 9 ms (1/f - 1)', \
     'results-link/results.csv' u (1/column('degraded_links[0].bandwidth_factor')):(ms('comm_exposed_s')) w p pt 7 lc rgb '#ee6677' title 'exposed communication', \
     '' u (1/column('degraded_links[0].bandwidth_factor')):(ms('step_time_s')) w p pt 7 lc rgb '#4477aa' title 'step time'
unset multiplot
