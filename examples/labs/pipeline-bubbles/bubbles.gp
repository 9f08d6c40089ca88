# bubbles.gp - measured bubble fraction (results/results.csv of bubble-sweep.json) against the
# closed forms. Run from this folder: gnuplot bubbles.gp (run.sh does).
# Columns of results.csv: 2 schedule, 3 virtual_stages, 4 pp, 5 microbatches, 7 step_time_s,
# 10 bubble_s.
set datafile separator ','
set terminal pngcairo size 1100,480 noenhanced font 'Sans,10'
set output 'bubbles.png'
set multiplot layout 1,2 title 'Pipeline bubble: dtsim (points) against the closed forms (lines); 32-layer synthetic model, free communication'
sel(s, v, p) = (strcol(2) eq s && $3 == v && $4 == p) ? 1 : NaN
set xlabel 'microbatches per step, m'
set xrange [0:68]
set grid
# (a) share of the step that stage 0 idles, GPipe and 1F1B: (p-1)/(m+p-1)
set title '(a) GPipe and 1F1B: bubble / step time = (p-1)/(m+p-1)'
set ylabel 'bubble fraction of the step time'
set yrange [0:0.5]
set key top right
plot for [p in "2 4 8"] (x>0 ? (p-1.)/(x+p-1.) : NaN) w l lw 1.5 lc rgb (p==2?'#4477aa':p==4?'#228833':'#ee6677') title sprintf('(p-1)/(m+p-1), p = %s', p), \
     for [p in "2 4 8"] 'results/results.csv' u 5:($10/$7 * sel('gpipe', 1, p+0)) w p pt 7 ps 1.1 lc rgb (p==2?'#4477aa':p==4?'#228833':'#ee6677') title sprintf('GPipe, p = %s', p), \
     for [p in "2 4 8"] 'results/results.csv' u 5:($10/$7 * sel('1f1b', 1, p+0)) w p pt 6 ps 2 lw 1.5 lc rgb 'black' title (p==8 ? '1F1B (all p)' : '')
# (b) interleaving, p = 8: bubble / ideal time m(t_f+t_b) = (p-1)/(v m)
set title '(b) p = 8, interleaving v chunks: bubble / (step - bubble) = (p-1)/(v m)'
set ylabel 'bubble / ideal (bubble-free) time'
set yrange [0:1]
plot for [v in "1 2 4"] (x>0 ? 7./(v*x) : NaN) w l lw 1.5 lc rgb (v==1?'#ee6677':v==2?'#228833':'#4477aa') title sprintf('7/(%s m)', v), \
     'results/results.csv' u 5:($10/($7-$10) * sel('1f1b', 1, 8)) w p pt 7 ps 1.1 lc rgb '#ee6677' title '1F1B (v = 1)', \
     'results/results.csv' u 5:($10/($7-$10) * sel('interleaved', 2, 8)) w p pt 7 ps 1.1 lc rgb '#228833' title 'interleaved, v = 2', \
     'results/results.csv' u 5:($10/($7-$10) * sel('interleaved', 4, 8)) w p pt 7 ps 1.1 lc rgb '#4477aa' title 'interleaved, v = 4'
unset multiplot
