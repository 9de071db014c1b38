# bench/lib/csv.sh: a benchmark's tables as CSV files, sourced by the
# drivers. Each table the driver prints is also written as FILE.csv: one
# header row whose column names carry their units (size_bytes, msgs_per_s,
# agg_MBps, ...), then one row per size or case, the references' columns
# beside squall's. A figure the table shows as "-" is an empty field.
#
# The folder is BENCH_CSV_DIR, which scripts/bench sets to a staging folder
# under /tmp (the Soft-RoCE VM writes the host's /tmp, not its build tree)
# and copies to ${SQUALL_BENCH_RESULTS:-BUILD/bench-results}/NAME when the
# driver ends. A driver started by hand without it writes straight there.
#
# Writing a CSV never stops a driver: a failure is one line on stderr, and
# the printed table and SUMMARY line stay what they are.
# shellcheck shell=bash

# csv_dir NAME: set CSV_DIR and create it.
csv_dir() {
    CSV_DIR=${BENCH_CSV_DIR:-${SQUALL_BENCH_RESULTS:-${BUILD:-build}/bench-results}/$1}
    mkdir -p "$CSV_DIR" 2>/dev/null ||
        echo "bench: cannot create $CSV_DIR: the CSV files of this run are not written" >&2
}

# csv_field VALUE: VALUE as one CSV field ("-" and "missing" are empty;
# commas, quotes and spaces are quoted).
csv_field() {
    local v=$1
    case "$v" in
    - | missing) v= ;;
    *[,\"\ ]*) v="\"${v//\"/\"\"}\"" ;;
    esac
    printf '%s' "$v"
}

# csv_line FIELD...: the fields as one CSV line on stdout.
csv_line() {
    local sep='' f
    for f in "$@"; do
        printf '%s' "$sep"
        csv_field "$f"
        sep=,
    done
    printf '\n'
}

# csv_header FILE COLUMN...: start CSV_DIR/FILE.csv with its header row.
csv_header() {
    local file=$1
    shift
    [ -n "${CSV_DIR:-}" ] || return 0
    csv_line "$@" 2>/dev/null >"$CSV_DIR/$file.csv" ||
        echo "bench: cannot write $CSV_DIR/$file.csv" >&2
}

# csv_row FILE VALUE...: append one row to CSV_DIR/FILE.csv.
csv_row() {
    local file=$1
    shift
    [ -n "${CSV_DIR:-}" ] || return 0
    [ -f "$CSV_DIR/$file.csv" ] || return 0
    csv_line "$@" 2>/dev/null >>"$CSV_DIR/$file.csv" ||
        echo "bench: cannot write $CSV_DIR/$file.csv" >&2
}
