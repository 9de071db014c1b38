#!/usr/bin/env bash
# bench/plot_test.sh SRC: the benchmarks' CSV files and their charts, with
# no VM and no benchmark run (unit suite).
#  - the CSV writer (bench/lib/csv.sh): a header and rows with awkward
#    values (missing figures, commas, quotes) come back, parsed as CSV,
#    with the header's column count on every row and the values intact;
#  - the committed samples (bench/testdata/NAME/*.csv) have exactly the
#    header the driver bench/NAME.sh writes, so the charts read the
#    columns a real run produces;
#  - bench/plot.sh draws every chart of each sample as a PNG, fails
#    naming the missing file when there is no CSV, and names gnuplot-nox
#    when gnuplot is missing; scripts/bench --plot says which benchmark to
#    run first.
# gnuplot is required, not optional: scripts/bootstrap installs it.
set -euo pipefail
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d /tmp/squall-plot-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

command -v gnuplot >/dev/null 2>&1 || {
    echo "FAIL: gnuplot is not installed: scripts/bootstrap installs it (Debian package gnuplot-nox)" >&2
    exit 1
}

# fields FILE: per line, the number of CSV fields then the fields, one per
# line after a line "--" (RFC 4180 quoting: "" inside quotes is one ").
parse() {
    awk '{
        n = 0; f = ""; q = 0; line = $0
        for (i = 1; i <= length(line); i++) {
            c = substr(line, i, 1)
            if (q) {
                if (c == "\"" && substr(line, i + 1, 1) == "\"") { f = f "\""; i++ }
                else if (c == "\"") q = 0
                else f = f c
            } else if (c == "\"" && f == "") q = 1
            else if (c == ",") { v[++n] = f; f = "" }
            else f = f c
        }
        if (q) { print "UNTERMINATED line " NR; exit 1 }
        v[++n] = f
        printf "%d", n; for (i = 1; i <= n; i++) printf "|%s", v[i]; printf "\n"
    }' "$1"
}
# same_width FILE: every row has the header's column count, and a row follows.
same_width() {
    local p w
    p=$(parse "$1") || { fail "$1: $p"; return; }
    # Not echo | head: bash's echo writes line by line, and head leaving
    # after the first line would end it with SIGPIPE (exit 141 here).
    w=${p%%$'\n'*}
    w=${w%%|*}
    [ "$(echo "$p" | wc -l)" -ge 2 ] || { fail "$1: no rows after the header"; return; }
    if echo "$p" | awk -F'|' -v w="$w" '$1 != w { print "line " NR ": " $1 " fields, header " w; bad = 1 } END { exit bad }'; then
        ok "$1: header and $(($(echo "$p" | wc -l) - 1)) rows of $w fields"
    else
        fail "$1: rows differ from the header's $w columns"
    fi
}

# ---- the writer ----
(
    export BENCH_CSV_DIR=$tmp/w
    . "$src/bench/lib/csv.sh"
    csv_dir sample
    csv_header t size_bytes squall_us "ref us" note
    csv_row t 64 12.5 - "plain"
    csv_row t 1024 "" 3.25 "a, b"
    csv_row t 8192 missing 4 'say "hi"'
)
same_width "$tmp/w/t.csv"
want='4|size_bytes|squall_us|ref us|note
4|64|12.5||plain
4|1024||3.25|a, b
4|8192||4|say "hi"'
got=$(parse "$tmp/w/t.csv")
[ "$got" = "$want" ] && ok "writer: values read back as written" ||
    fail "writer: read back
$got
expected
$want"
# a folder that cannot be made: a warning, and the caller goes on
out=$(BENCH_CSV_DIR=/proc/no/such bash -c ". '$src/bench/lib/csv.sh'; set -e; csv_dir x;
    csv_header t a; csv_row t 1; echo went-on" 2>&1)
case "$out" in *went-on*) ok "writer: an unwritable folder does not stop the driver" ;;
*) fail "writer: an unwritable folder stopped the driver: $out" ;; esac

# ---- the samples carry the drivers' headers ----
# header_of DRIVER FILE: the columns of the driver's "csv_header FILE ..."
header_of() {
    awk -v f="$2" '!on && $1 == "csv_header" && $2 == f { on = 1 }
        on { print; if (!/\\$/) exit }' "$1" | tr -d '\\\n' |
        sed "s/^ *csv_header $2 //" | tr -s ' ' '\n' | grep . | paste -sd, -
}
for d in "$src"/bench/testdata/*/; do
    name=$(basename "$d")
    for f in "$d"*.csv; do
        file=$(basename "$f" .csv)
        same_width "$f"
        h=$(header_of "$src/bench/$name.sh" "$file")
        if [ -z "$h" ]; then
            fail "bench/$name.sh writes no $file.csv"
        elif [ "$h" = "$(head -n1 "$f")" ]; then
            ok "$name/$file.csv: the header bench/$name.sh writes"
        else
            fail "$name/$file.csv header $(head -n1 "$f") differs from bench/$name.sh's $h"
        fi
    done
done

# ---- the charts ----
declare -A pngs=([smc]="smc_rate smc_latency" [rdmc]="rdmc_throughput rdmc_link_fraction"
    [alloc]="alloc_ops" [rdma_ping]="rdma_ping_latency rdma_ping_bandwidth")
for name in $("$src/bench/plot.sh" --list); do
    [ -d "$src/bench/testdata/$name" ] || { fail "no sample CSV for $name in bench/testdata"; continue; }
    if ! "$src/bench/plot.sh" "$name" "$src/bench/testdata/$name" "$tmp/png/$name" >"$tmp/plot.out" 2>&1; then
        fail "bench/plot.sh $name: $(cat "$tmp/plot.out")"
        continue
    fi
    for p in ${pngs[$name]}; do
        f=$tmp/png/$name/$p.png
        if [ -s "$f" ] && [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
            [ "$(stat -c %s "$f")" -gt 5000 ]; then
            ok "$name: $p.png ($(stat -c %s "$f") bytes)"
        else
            fail "$name: no PNG $p.png"
        fi
    done
done

# ---- clear failures ----
mkdir -p "$tmp/empty"
if out=$("$src/bench/plot.sh" smc "$tmp/empty" 2>&1); then
    fail "plot.sh with no CSV succeeded"
else
    case "$out" in *"run scripts/bench smc first"*) ok "no CSV: $out" ;; *) fail "no CSV: $out" ;; esac
fi
if out=$(SQUALL_BENCH_RESULTS=$tmp/empty "$src/scripts/bench" --plot rdmc 2>&1); then
    fail "scripts/bench --plot rdmc with no CSV succeeded"
else
    case "$out" in *"run scripts/bench rdmc first"*) ok "scripts/bench --plot: $out" ;;
    *) fail "scripts/bench --plot with no CSV: $out" ;; esac
fi
if out=$(PATH=/nonexistent /bin/bash "$src/bench/plot.sh" smc "$src/bench/testdata/smc" "$tmp/x" 2>&1); then
    fail "plot.sh without gnuplot succeeded"
else
    case "$out" in *gnuplot-nox*) ok "no gnuplot: $out" ;; *) fail "no gnuplot: $out" ;; esac
fi

[ $fails = 0 ] || { echo "$fails failure(s)" >&2; exit 1; }
echo "all passed"
