# Sourced by the rdma VM tests: start rdma_ping members in the background,
# wait for them with a deadline, kill leftovers on exit.
# Members are 10.77.0.1..N (one address per member on the VM's rxe device).
set -u
PING=${BUILD:?BUILD must name the build folder}/examples/rdma_ping
[ -x "$PING" ] || { echo "FAIL: $PING is not built" >&2; exit 1; }
OUT=$(mktemp -d /tmp/squall-rdma-test.XXXXXX)
. "$SRC/tests/vm/lib.sh"

# members N BASEPORT: the --member arguments for members 1..N
members() {
    local n=$1 port=$2 i args=""
    for i in $(seq 1 "$n"); do
        args="$args --member $i,10.77.0.$i,$((port + i))"
    done
    echo "$args"
}

# start ID ARGS...: run member ID in the background, output in $OUT/ID.{out,err}
start() {
    local id=$1
    shift
    "$PING" --id "$id" "$@" >"$OUT/$id.out" 2>"$OUT/$id.err" &
    PID[$id]=$!
}

# use_member NAME: run_member starts $BUILD/tests/vm/NAME instead of
# rdma_ping (the tests of one member program of their own).
use_member() {
    MEMBER=$BUILD/tests/vm/$1
    [ -x "$MEMBER" ] || fail "$MEMBER is not built"
}

# run_member ID ARGS...: as start, with the program use_member chose.
run_member() {
    local id=$1
    shift
    "$MEMBER" --id "$id" "$@" >"$OUT/$id.out" 2>"$OUT/$id.err" &
    PID[$id]=$!
}

# finish_ok ID SECONDS: finish, and fail unless member ID exited with 0.
finish_ok() {
    finish "$1" "$2"
    [ "$RC" = 0 ] || fail "member $1 exited with status $RC"
}

show() {
    local id=$1
    echo "--- member $id stdout"; cat "$OUT/$id.out"
    echo "--- member $id stderr"; cat "$OUT/$id.err"
}

fail() {
    echo "FAIL: $*"
    for f in "$OUT"/*.out; do show "$(basename "$f" .out)"; done
    exit 1
}

# expect FILE PATTERN WHAT: the file must contain PATTERN (extended regex).
expect() {
    grep -Eq -- "$2" "$1" || fail "$3: no line matching '$2' in $1"
}
