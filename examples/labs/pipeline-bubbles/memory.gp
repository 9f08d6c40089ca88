# memory.gp - peak activation memory per GPU (results-memory/results.csv of memory-sweep.json)
# against the closed forms (docs/workloads.md): p = 8 stages of L/p = 4 layers, A = 100 MB per
# layer and microbatch. Columns are read by name: results.csv gains columns as dtsim's summary
# grows (comm_tp_s .. comm_zero_s moved mem_activations_bytes from column 19 to 23).
set datafile separator ','
set datafile columnheaders
set terminal pngcairo size 800,500 noenhanced font 'Sans,10'
set output 'memory.png'
set title 'Peak activation memory of stage 0 (p = 8, 4 layers of 100 MB per microbatch)'
set xlabel 'microbatches per step, m'
set ylabel 'activation memory per GPU (GB)'
set xrange [0:68]
set yrange [0:28]
set grid
set key top left
sel(s, v) = (strcol('parallel.schedule') eq s && column('parallel.virtual_stages') == v) ? 1 : NaN
min(a, b) = a < b ? a : b
plot 0.4*x w l lc rgb '#ee6677' title 'GPipe: m x 4 x 0.1 GB', \
     (x>0 ? 0.4*min(8, x) : NaN) w l lc rgb '#4477aa' title '1F1B: min(p, m) x 4 x 0.1 GB', \
     (x>0 ? 0.2*min(23, 2*x) : NaN) w l dt 2 lc rgb '#228833' title 'interleaved v = 2: min(2(p-1)+(v-1)p+1, vm) x 2 x 0.1 GB', \
     (x>0 ? 0.1*min(39, 4*x) : NaN) w l dt 3 lc rgb '#aa3377' title 'interleaved v = 4: min(.., vm) x 1 x 0.1 GB', \
     'results-memory/results.csv' u (column('parallel.microbatches')):(column('mem_activations_bytes')/1e9 * sel('gpipe', 1)) w p pt 7 lc rgb '#ee6677' title 'GPipe (dtsim)', \
     'results-memory/results.csv' u (column('parallel.microbatches')):(column('mem_activations_bytes')/1e9 * sel('1f1b', 1)) w p pt 7 lc rgb '#4477aa' title '1F1B (dtsim)', \
     'results-memory/results.csv' u (column('parallel.microbatches')):(column('mem_activations_bytes')/1e9 * sel('interleaved', 2)) w p pt 5 lc rgb '#228833' title 'interleaved v = 2 (dtsim)', \
     'results-memory/results.csv' u (column('parallel.microbatches')):(column('mem_activations_bytes')/1e9 * sel('interleaved', 4)) w p pt 9 lc rgb '#aa3377' title 'interleaved v = 4 (dtsim)'
