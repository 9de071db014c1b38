#!/usr/bin/env bash
# bench/plot.sh: PNG charts of a benchmark's CSV files (bench/lib/csv.sh),
# drawn with gnuplot (Debian's gnuplot-nox). scripts/bench --plot NAME
# calls it with the results folder of NAME; the unit suite calls it on
# bench/testdata (bench/plot_test.sh).
#
#   smc        smc_rate.png: delivered msgs/s by message size, one sender
#              and every member sending, against ib_write_bw's message
#              rate; smc_latency.png: p50 and p99 send-to-delivery latency
#              of the paced run by message size.
#   rdmc       rdmc_throughput.png: aggregate MB/s by message size for 1-3
#              receivers against MPI_Bcast, with both links as lines;
#              rdmc_link_fraction.png: each as a fraction of its own link
#              (RDMC of ib_write_bw, MPI_Bcast of one iperf3 TCP stream).
#   alloc      alloc_ops.png: million lease+release per second by size
#              (one size per run), 1 and 2 threads, against jemalloc and
#              glibc malloc.
#   rdma_ping  rdma_ping_latency.png and rdma_ping_bandwidth.png by size
#              against ib_write_lat and ib_write_bw.
# Sizes are on a log scale; every chart says what was measured and in
# which unit.
#
# usage: bench/plot.sh NAME CSV_DIR [OUT_DIR]   (OUT_DIR: CSV_DIR)
#        bench/plot.sh --list                   (the NAMEs it draws)
set -euo pipefail
NAMES="smc rdmc alloc rdma_ping"
if [ "${1:-}" = --list ]; then
    echo $NAMES
    exit 0
fi
[ $# -ge 2 ] || { echo "usage: bench/plot.sh NAME CSV_DIR [OUT_DIR] | --list" >&2; exit 2; }
name=$1 in=$2 out=${3:-$2}
die() { echo "bench/plot $name: $*" >&2; exit 1; }
case " $NAMES " in *" $name "*) ;; *) die "no chart is defined for $name (charts: $NAMES); its CSV files are in $in" ;; esac
command -v gnuplot >/dev/null 2>&1 ||
    die "gnuplot not found: install Debian's gnuplot-nox (scripts/bootstrap installs it)"
mkdir -p "$out"
tmp=$(mktemp -d /tmp/squall-plot.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# pngcairo draws smoother lines; gnuplot-nox has both.
term="pngcairo size 900,640 font 'sans,11'"
gnuplot -e "set terminal pngcairo" >/dev/null 2>&1 || term="png size 900,640"

# need FILE: the CSV file, or a clear failure.
need() {
    [ -s "$in/$1.csv" ] || die "no $in/$1.csv: run scripts/bench $name first"
    echo "$in/$1.csv"
}
# col FILE COLUMN: the 1-based index of COLUMN in FILE's header row.
col() {
    local i
    i=$(head -n1 "$1" | tr -d '\r' | awk -F, -v c="$2" '{ for (i = 1; i <= NF; i++) if ($i == c) print i }')
    [ -n "$i" ] || die "$1 has no column $2 (header: $(head -n1 "$1"))"
    echo "$i"
}
# series FILE DAT XCOL YCOL [KEYCOL KEYVAL] [DIVCOL]: the rows whose KEYCOL
# is KEYVAL (all rows without one) as "x y" in DAT, y divided by DIVCOL's
# value when given; rows with an empty x or y are left out.
series() {
    local f=$1 dat=$2 x y k='' kv='' d=''
    x=$(col "$f" "$3")
    y=$(col "$f" "$4")
    if [ -n "${5:-}" ]; then k=$(col "$f" "$5"); kv=$6; fi
    [ -z "${7:-}" ] || d=$(col "$f" "$7")
    tail -n +2 "$f" | tr -d '\r' | awk -F, -v x="$x" -v y="$y" -v k="$k" -v kv="$kv" -v d="$d" '
        (k == "" || $k == kv) && $x != "" && $y != "" && (d == "" || $d + 0 != 0) {
            print $x, (d == "") ? $y : $y / $d }' | sort -g >"$tmp/$dat"
}
# size_label N UNIT: N bytes (UNIT B) or MiB as "64 B", "8 KiB", "64 MiB".
size_label() {
    awk -v n="$1" -v u="$2" 'BEGIN {
        split("B KiB MiB GiB", units, " "); i = (u == "MiB") ? 3 : 1
        while (n >= 1024 && n % 1024 == 0 && i < 4) { n /= 1024; i++ }
        printf "%s %s", n, units[i] }'
}
# xtics UNIT FILE...: gnuplot xtics and xrange for the sizes of the DAT files.
xtics() {
    local u=$1 s tics='' lo hi
    shift
    local sizes
    sizes=$(cd "$tmp" && cat "$@" | awk '{ print $1 }' | sort -gu)
    [ -n "$sizes" ] || return 0
    for s in $sizes; do tics+="${tics:+, }\"$(size_label "$s" "$u")\" $s"; done
    # (not echo | head: with pipefail, head leaving early fails the
    # pipeline on SIGPIPE, since bash's echo writes line by line)
    lo=${sizes%%$'\n'*}
    hi=${sizes##*$'\n'}
    echo "set xtics ($tics)"
    echo "set xrange [$lo / 1.6 : $hi * 1.6]"
}
# chart PNG TITLE XLABEL YLABEL YSCALE UNIT SERIES...: one line chart, SERIES
# as "DAT|title|style" (style: gnuplot's, after "with"); a series with no
# points is left out, and a chart with none fails. YSCALE: log or linear.
chart() {
    local png=$1 title=$2 xl=$3 yl=$4 ys=$5 u=$6 s dat plots='' dats=()
    shift 6
    for s in "$@"; do
        dat=${s%%|*}
        [ -s "$tmp/$dat" ] || continue
        dats+=("$dat")
    done
    [ ${#dats[@]} -gt 0 ] || die "$png: no figures in the CSV (every column it draws is empty)"
    for s in "$@"; do
        dat=${s%%|*}
        [ -s "$tmp/$dat" ] || continue
        local rest=${s#*|}
        plots+="${plots:+, }'$tmp/$dat' using 1:2 title \"${rest%%|*}\" with ${rest#*|}"
    done
    {
        echo "set terminal $term"
        echo "set output '$out/$png'"
        echo "set title \"$title\" noenhanced"
        echo "set xlabel \"$xl\" noenhanced"
        echo "set ylabel \"$yl\" noenhanced"
        echo "set logscale x 2"
        xtics "$u" "${dats[@]}"
        if [ "$ys" = log ]; then
            echo "set logscale y 10"
            # ticks at 1, 2, 3 and 5 of every decade the figures span
            (cd "$tmp" && cat "${dats[@]}") | awk '$2 > 0 {
                if (lo == "" || $2 < lo) lo = $2; if ($2 > hi) hi = $2 }
                END { if (lo == "") exit
                    t = ""; for (d = 10 ^ int(log(lo) / log(10) - 1); d <= hi * 10; d *= 10)
                        for (i = 1; i <= 4; i++) { v = d * substr("1235", i, 1)
                            if (v >= lo / 2.5 && v <= hi * 2.5) t = t (t == "" ? "" : ", ") v }
                    print "set ytics (" t ")"; print "set yrange [" lo / 1.3 ":" hi * 1.3 "]" }'
        else
            echo "set yrange [0:*]"
        fi
        # 60k rather than 60000 for large figures; ratios and latencies as they are
        if (cd "$tmp" && cat "${dats[@]}") | awk '$2 >= 10000 { f = 1 } END { exit !f }'; then
            echo "set format y '%.0s%c'"
        else
            echo "set format y '%g'"
        fi
        echo "set grid xtics ytics mytics"
        echo "set key below center horizontal maxcols 2 noenhanced"
        echo "set tmargin 3"
        echo "plot $plots"
    } >"$tmp/$png.gp"
    gnuplot "$tmp/$png.gp" 2>"$tmp/$png.err" || { cat "$tmp/$png.err" >&2; die "gnuplot failed on $png"; }
    [ -s "$out/$png" ] || die "gnuplot wrote no $out/$png"
    echo "$out/$png"
}
# hline DAT FILE COLUMN: DAT holds FILE's first value of COLUMN at every x
# of the series already in $tmp/$4 (a reference drawn as a flat line).
hline() {
    local v
    v=$(tail -n +2 "$2" | tr -d '\r' | awk -F, -v c="$(col "$2" "$3")" '$c != "" { print $c; exit }')
    : >"$tmp/$1"
    [ -n "$v" ] || return 0
    awk -v v="$v" '{ print $1, v }' "$tmp/$4" | sort -gu >"$tmp/$1"
}

L='linespoints lw 2 pt 7 ps 1.2'
L2='linespoints lw 2 pt 6 ps 1.2'  # the references' open points
case "$name" in
smc)
    f=$(need smc)
    maxk=$(tail -n +2 "$f" | awk -F, -v k="$(col "$f" senders)" '$k > m { m = $k } END { print m + 0 }')
    series "$f" one.dat size_bytes smc_msgs_per_s senders 1
    series "$f" all.dat size_bytes smc_msgs_per_s senders "$maxk"
    series "$f" pf.dat size_bytes perftest_msgs_per_s senders 1
    chart smc_rate.png \
        "SMC: ordered messages delivered per second by size ($maxk members) vs ib_write_bw, same run" \
        "message size (bytes, log scale)" "messages per second (lowest receiving member)" linear B \
        "one.dat|squall SMC, 1 sender|$L lc rgb '#1f77b4'" \
        "all.dat|squall SMC, $maxk senders (all)|$L lc rgb '#2ca02c'" \
        "pf.dat|ib_write_bw message rate (1 QP)|$L dt 2 lc rgb '#d62728'"
    for k in 1 "$maxk"; do
        series "$f" p50.$k.dat size_bytes p50_us senders "$k"
        series "$f" p99.$k.dat size_bytes p99_us senders "$k"
    done
    chart smc_latency.png \
        "SMC: send-to-delivery latency by size, paced run (one message in flight per sender)" \
        "message size (bytes, log scale)" "latency (microseconds, log scale)" log B \
        "p50.1.dat|p50, 1 sender|$L lc rgb '#1f77b4'" \
        "p99.1.dat|p99, 1 sender|$L dt 2 lc rgb '#1f77b4'" \
        "p50.$maxk.dat|p50, $maxk senders|$L lc rgb '#2ca02c'" \
        "p99.$maxk.dat|p99, $maxk senders|$L dt 2 lc rgb '#2ca02c'"
    ;;
rdmc)
    f=$(need rdmc)
    colors=('' '#1f77b4' '#2ca02c' '#9467bd')
    sr=() sf=()
    for r in 1 2 3; do
        series "$f" rdmc.$r.dat size_MiB rdmc_agg_MBps receivers "$r"
        series "$f" mpi.$r.dat size_MiB mpi_agg_MBps receivers "$r"
        series "$f" rdmcf.$r.dat size_MiB rdmc_agg_MBps receivers "$r" link_ib_write_bw_MBps
        series "$f" mpif.$r.dat size_MiB mpi_agg_MBps receivers "$r" tcp_link_iperf3_MBps
        sr+=("rdmc.$r.dat|squall RDMC, $r receiver$([ $r = 1 ] || echo s)|$L lc rgb '${colors[$r]}'"
            "mpi.$r.dat|MPI_Bcast (TCP), $r receiver$([ $r = 1 ] || echo s)|$L2 dt 2 lc rgb '${colors[$r]}'")
        sf+=("rdmcf.$r.dat|squall RDMC / ib_write_bw, $r receiver$([ $r = 1 ] || echo s)|$L lc rgb '${colors[$r]}'"
            "mpif.$r.dat|MPI_Bcast / iperf3, $r receiver$([ $r = 1 ] || echo s)|$L2 dt 2 lc rgb '${colors[$r]}'")
    done
    cat "$tmp"/rdmc.*.dat "$tmp"/mpi.*.dat | sort -gu >"$tmp/xs.dat"
    hline link.dat "$f" link_ib_write_bw_MBps xs.dat
    hline tcp.dat "$f" tcp_link_iperf3_MBps xs.dat
    chart rdmc_throughput.png \
        "RDMC vs MPI_Bcast: bytes delivered to all receivers per second, by message size, same run" \
        "message size (MiB, log scale)" "aggregate throughput (MB/s, MB = 2^20 bytes)" linear MiB \
        "${sr[@]}" \
        "link.dat|link: ib_write_bw, 1 MiB|lines lw 2 dt 4 lc rgb '#d62728'" \
        "tcp.dat|TCP link: iperf3, one stream|lines lw 2 dt 4 lc rgb '#ff7f0e'"
    chart rdmc_link_fraction.png \
        "RDMC and MPI_Bcast as a fraction of their own link, by message size, same run" \
        "message size (MiB, log scale)" "aggregate throughput / link throughput" linear MiB \
        "${sf[@]}"
    ;;
alloc)
    f=$(need alloc)
    # fixed sizes only (size_lo = size_hi); the mixes are in the CSV.
    awk -F, -v lo="$(col "$f" size_lo_bytes)" -v hi="$(col "$f" size_hi_bytes)" \
        'NR == 1 || $lo == $hi' "$f" >"$tmp/alloc.csv"
    sa=()
    for t in 1 2; do
        series "$tmp/alloc.csv" sq.$t.dat size_lo_bytes squall_Mops_per_s threads "$t"
        series "$tmp/alloc.csv" one.$t.dat size_lo_bytes squall_one_Mops_per_s threads "$t"
        series "$tmp/alloc.csv" je.$t.dat size_lo_bytes jemalloc_Mops_per_s threads "$t"
        series "$tmp/alloc.csv" ma.$t.dat size_lo_bytes malloc_Mops_per_s threads "$t"
        d=$([ $t = 1 ] && echo 1 || echo 2)
        th="$t thread$([ $t = 1 ] || echo s)"
        sa+=("sq.$t.dat|squall alloc_lease+alloc_release, $th|$L dt $d lc rgb '#1f77b4'"
            "one.$t.dat|squall alloc_lease_one+alloc_release_one, $th|$L dt $d lc rgb '#2ca02c'"
            "je.$t.dat|jemalloc malloc+free, $th|$L dt $d lc rgb '#d62728'"
            "ma.$t.dat|glibc malloc+free, $th|$L dt $d lc rgb '#7f7f7f'")
    done
    chart alloc_ops.png \
        "Allocator: lease+release per second by buffer size vs jemalloc and glibc malloc" \
        "buffer size (bytes, log scale)" "million operations per second (all threads)" linear B \
        "${sa[@]}"
    ;;
rdma_ping)
    f=$(need rdma_ping)
    series "$f" lat.dat size_bytes rdma_ping_lat_us
    series "$f" plat.dat size_bytes ib_write_lat_us
    series "$f" bw.dat size_bytes rdma_ping_MBps
    series "$f" pbw.dat size_bytes ib_write_bw_MBps
    chart rdma_ping_latency.png \
        "rdma_ping vs ib_write_lat: half round trip of RDMA writes by size (median), same run" \
        "message size (bytes, log scale)" "latency (microseconds, log scale)" log B \
        "lat.dat|squall rdma_ping|$L lc rgb '#1f77b4'" \
        "plat.dat|ib_write_lat (t_typical)|$L dt 2 lc rgb '#d62728'"
    chart rdma_ping_bandwidth.png \
        "rdma_ping vs ib_write_bw: RDMA write bandwidth by size, 16 in flight, same run" \
        "message size (bytes, log scale)" "bandwidth (MB/s, MB = 2^20 bytes)" linear B \
        "bw.dat|squall rdma_ping|$L lc rgb '#1f77b4'" \
        "pbw.dat|ib_write_bw|$L dt 2 lc rgb '#d62728'"
    ;;
esac
