# Sourced by the group VM tests (smc_order3.sh, rdmc_order4.sh,
# group_api3.sh, kvstore3.sh): run one program per member of a conf/
# group file in the background, wait for all with a deadline, and check
# what they printed. Callers set N (members) and CFG.
set -u
N=${N:?N must be set}
CFG=${CFG:-$SRC/conf/local-$N.cfg}
GM=${BUILD:?BUILD must name the build folder}/tests/vm/group_member
[ -x "$GM" ] || { echo "FAIL: $GM is not built" >&2; exit 1; }
OUT=$(mktemp -d /tmp/squall-group-test.XXXXXX)
. "$SRC/tests/vm/lib.sh"

fail() {
    echo "FAIL: $*"
    for f in "$OUT"/*.out; do
        echo "--- $f"; cat "$f"; echo "--- ${f%.out}.err"; cat "${f%.out}.err"
    done
    exit 1
}

# run_members NAME SECONDS PROGRAM ARGS...: member i (0..N-1) runs
# PROGRAM --config CFG --id i ARGS... plus ${EXTRA[i]:-}; waits for all;
# fails unless every member exits 0.
run_members() {
    local name=$1 secs=$2 i
    shift 2
    for i in $(seq 0 $((N - 1))); do
        # shellcheck disable=SC2086
        "$@" --config "$CFG" --id "$i" ${EXTRA[$i]:-} \
            >"$OUT/$name.$i.out" 2>"$OUT/$name.$i.err" &
        PID[$i]=$!
    done
    for i in $(seq 0 $((N - 1))); do
        finish "$i" "$secs"
        [ "$RC" = 0 ] || fail "$name: member $i exited with status $RC"
    done
}

# field NAME ID KEY: the value of KEY= in member ID's result line.
field() {
    sed -n "s/.* $3=\([^ ]*\).*/\1/p" "$OUT/$1.$2.out" | head -n1
}

# check_order NAME: every member delivered what it expected, intact, in
# one order (same hash), with no payload copied.
check_order() {
    local name=$1 i h0
    h0=$(field "$name" 0 hash)
    for i in $(seq 0 $((N - 1))); do
        grep -q "^ORDER member=$i " "$OUT/$name.$i.out" || fail "$name: member $i printed no result"
        [ "$(field "$name" "$i" bad)" = 0 ] || fail "$name: member $i saw damaged or misordered messages"
        [ "$(field "$name" "$i" delivered)" = "$(field "$name" "$i" expected)" ] ||
            fail "$name: member $i delivered $(field "$name" "$i" delivered) of $(field "$name" "$i" expected)"
        [ "$(field "$name" "$i" hash)" = "$h0" ] || fail "$name: member $i delivered another sequence"
        [ "$(field "$name" "$i" copies)" = 0 ] && [ "$(field "$name" "$i" payload_copies)" = 0 ] ||
            fail "$name: member $i copied payloads"
    done
    echo "ok: $name: $N members delivered $(field "$name" 0 delivered) messages in one order (hash $h0), every byte checked, 0 copies"
}
