# SPDX-License-Identifier: GPL-2.0-or-later
# Medians of results.csv per (vmm, case) and IOPS ratios of chosen pairs.
#   awk -F, -v pairs="brisk:qemu,qemu-a:qemu-b" -v dat=FILE -f summary.awk results.csv
# Prints markdown tables: medians, ratios of medians, and the median of
# per-run ratios (run i of A over run i of B: neighbours in time, so a slow
# drift of the host's load cancels out).  With dat= also writes the medians as a
# whitespace table (case, then IOPS and exits/IO per vmm) for gnuplot.
# Plain POSIX awk: the nested host may only have mawk.

function median(key,    n, i, j, t, a) {
	n = cnt[key]
	if (n == 0) return ""
	for (i = 1; i <= n; i++) a[i] = val[key, i]
	for (i = 2; i <= n; i++)	# insertion sort: a handful of runs
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function add(vmm, cs, col, v) {
	if (v == "") return
	key = vmm SUBSEP cs SUBSEP col
	val[key, ++cnt[key]] = v
}
function seen(list, x, arr,    n, i) {
	n = split(list, arr, SUBSEP)
	for (i = 1; i <= n; i++) if (arr[i] == x) return 1
	return 0
}
function fmt(x, d) { return x == "" ? "-" : sprintf("%." d "f", x) }
NR == 1 { next }
{
	if (!seen(vmms, $1)) vmms = vmms == "" ? $1 : vmms SUBSEP $1
	if (!seen(cases, $2)) cases = cases == "" ? $2 : cases SUBSEP $2
	add($1, $2, "iops", $4); add($1, $2, "exits", $5)
	add($1, $2, "irqs", $6); add($1, $2, "cpu", $7)
	if ($4 != "") { run_iops[$1, $2, $3] = $4; if ($3 > maxrun) maxrun = $3 }
}
function paired(a, b, cs,    r, key) {
	key = "pair" SUBSEP a SUBSEP b SUBSEP cs
	for (r = 1; r <= maxrun; r++)
		if (((a, cs, r) in run_iops) && ((b, cs, r) in run_iops) && run_iops[b, cs, r] > 0)
			val[key, ++cnt[key]] = run_iops[a, cs, r] / run_iops[b, cs, r]
	return median(key)
}
END {
	nv = split(vmms, V, SUBSEP); nc = split(cases, C, SUBSEP)
	print "| case | vmm | runs | IOPS (median) | exits/IO | irqs/IO | CPU us/IO |"
	print "|---|---|---|---|---|---|---|"
	for (c = 1; c <= nc; c++)
		for (v = 1; v <= nv; v++) {
			k = V[v] SUBSEP C[c] SUBSEP "iops"
			if (!cnt[k]) continue
			printf "| %s | %s | %d | %s | %s | %s | %s |\n", C[c], V[v], cnt[k],
			    fmt(median(k), 0),
			    fmt(median(V[v] SUBSEP C[c] SUBSEP "exits"), 2),
			    fmt(median(V[v] SUBSEP C[c] SUBSEP "irqs"), 3),
			    fmt(median(V[v] SUBSEP C[c] SUBSEP "cpu"), 1)
		}
	np = split(pairs, P, ",")
	if (np) {
		print ""
		print "IOPS ratios: of the medians (median of the per-run ratios)"
		print ""
		printf "| case |"
		for (p = 1; p <= np; p++) { split(P[p], ab, ":"); printf " %s / %s |", ab[1], ab[2] }
		printf "\n|---|"
		for (p = 1; p <= np; p++) printf "---|"
		print ""
		for (c = 1; c <= nc; c++) {
			printf "| %s |", C[c]
			for (p = 1; p <= np; p++) {
				split(P[p], ab, ":")
				a = median(ab[1] SUBSEP C[c] SUBSEP "iops")
				b = median(ab[2] SUBSEP C[c] SUBSEP "iops")
				q = paired(ab[1], ab[2], C[c])
				printf " %s (per run %s) |", (a == "" || b == "" || b == 0) ? "-" : sprintf("%.3f", a / b),
				    q == "" ? "-" : sprintf("%.3f", q)
			}
			print ""
		}
	}
	if (dat != "") {
		printf "case" > dat
		for (v = 1; v <= nv; v++) printf " %s", V[v] > dat
		for (v = 1; v <= nv; v++) printf " %s", V[v] > dat
		print "" > dat
		for (c = 1; c <= nc; c++) {
			printf "%s", C[c] > dat
			for (v = 1; v <= nv; v++) {
				x = median(V[v] SUBSEP C[c] SUBSEP "iops"); printf " %s", x == "" ? "NaN" : x > dat
			}
			for (v = 1; v <= nv; v++) {
				x = median(V[v] SUBSEP C[c] SUBSEP "exits"); printf " %s", x == "" ? "NaN" : x > dat
			}
			print "" > dat
		}
		close(dat)
	}
}
