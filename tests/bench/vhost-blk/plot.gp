# SPDX-License-Identifier: GPL-2.0-or-later
# IOPS and back-end CPU time per I/O, per case and back-end, from the
# medians.dat vhost-blk-vs-qsd.sh writes.
#   gnuplot -e "dat='medians.dat'; out='chart.svg'; nb=3" plot.gp
# Columns: case, nb IOPS columns, nb CPU ns/IO columns (headers name the
# back-end).
if (!exists("title")) title = "vhost-user-blk, 4 KiB random reads, one queue"
set terminal svg size 1100,440 dynamic font "sans,11"
set output out
set termoption noenhanced
set datafile missing "NaN"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top left
set yrange [0:*]
set xtics rotate by -30
set multiplot layout 1,2 title title
set title "IOPS (median, log scale)"
set logscale y
set yrange [1000:*]
plot for [i=2:nb+1] dat using i:xtic(1) title columnhead(i)
set title "back-end CPU ns per I/O (median)"
unset logscale y
set yrange [0:*]
plot for [i=nb+2:2*nb+1] dat using i:xtic(1) title columnhead(i)
unset multiplot
