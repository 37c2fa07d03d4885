# SPDX-License-Identifier: GPL-2.0-or-later
# IOPS and VM exits per I/O, per case and VMM, from summary.awk's dat file.
#   gnuplot -e "dat='medians.dat'; out='chart.svg'; nv=2; exits=1" plot.gp
# Columns: case, nv IOPS columns, nv exits/IO columns (headers name the VMM).
# exits=0 drops the second panel when no exit counters were available.
if (!exists("exits")) exits = 1
if (!exists("title")) title = "fio 4k randread, iodepth 64, in the guest"
set terminal svg size 900,420 dynamic font "sans,11"
set output out
set datafile missing "NaN"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top left
set yrange [0:*]
set multiplot layout 1,(exits ? 2 : 1) title title
set title "IOPS (median)"
plot for [i=2:nv+1] dat using i:xtic(1) title columnhead(i)
if (exits) {
	set title "VM exits per I/O (median)"
	plot for [i=nv+2:2*nv+1] dat using i:xtic(1) title columnhead(i)
}
unset multiplot
