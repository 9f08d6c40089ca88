# validation_parity.gp - written by `dtsim report`; edit and run `gnuplot validation_parity.gp` to restyle.
# One panel per metric: predicted against measured, y = x and the +-5 % / +-10 % bands.
do for [out = 1:2] {
  if (out == 1) { set terminal pngcairo size 1470,520 noenhanced font 'Sans,10'; set output 'validation_parity.png' }
  if (out == 2) { set terminal svg size 1470,520 dynamic noenhanced font 'Sans,10'; set output 'validation_parity.svg' }
  set multiplot layout 1,3 title 'dtsim validate: predicted vs measured'
  set grid
  set size ratio -1
  set key inside left top font ',8'
  set logscale xy 10
  set xrange [0.727159:237.628]; set yrange [0.727159:237.628]
  set title 'step time (s)'; set xlabel 'measured'; set ylabel 'predicted'
  plot x with lines lw 1.5 lc rgb 'black' title 'y = x', \
       1.05*x with lines dt 2 lc rgb '#228833' title '+-5 %', 0.95*x with lines dt 2 lc rgb '#228833' notitle, \
       1.10*x with lines dt 3 lc rgb '#ccbb44' title '+-10 %', 0.90*x with lines dt 3 lc rgb '#ccbb44' notitle, \
       'validation_parity.dat' index 0 using 1:2 with points pt 7 ps 1.1 lc rgb '#4477aa' notitle, \
       '' index 0 using 1:2:3 with labels font ',7' offset 0.8,0.5 left notitle
  unset logscale
  set xrange [313.17:557.868]; set yrange [313.17:557.868]
  set title 'model TFLOP/s per GPU'; set xlabel 'measured'; set ylabel 'predicted'
  plot x with lines lw 1.5 lc rgb 'black' title 'y = x', \
       1.05*x with lines dt 2 lc rgb '#228833' title '+-5 %', 0.95*x with lines dt 2 lc rgb '#228833' notitle, \
       1.10*x with lines dt 3 lc rgb '#ccbb44' title '+-10 %', 0.90*x with lines dt 3 lc rgb '#ccbb44' notitle, \
       'validation_parity.dat' index 1 using 1:2 with points pt 7 ps 1.1 lc rgb '#4477aa' notitle, \
       '' index 1 using 1:2:3 with labels font ',7' offset 0.8,0.5 left notitle
  unset logscale
  set xrange [40.4:414.4]; set yrange [40.4:414.4]
  set title 'bus bandwidth (GB/s)'; set xlabel 'measured'; set ylabel 'predicted'
  plot x with lines lw 1.5 lc rgb 'black' title 'y = x', \
       1.05*x with lines dt 2 lc rgb '#228833' title '+-5 %', 0.95*x with lines dt 2 lc rgb '#228833' notitle, \
       1.10*x with lines dt 3 lc rgb '#ccbb44' title '+-10 %', 0.90*x with lines dt 3 lc rgb '#ccbb44' notitle, \
       'validation_parity.dat' index 2 using 1:2 with points pt 7 ps 1.1 lc rgb '#4477aa' notitle, \
       '' index 2 using 1:2:3 with labels font ',7' offset 0.8,0.5 left notitle
  unset multiplot
  unset output
}
