# Sourced by the SST VM tests (sst_countersN.sh, with N set): start
# sst_member processes on members 10.77.0.1..N, wait for them with
# deadlines, kill leftovers on exit, and check what they printed.
#
# Phase 1 (counters): every member increments its counter COUNT times with
# a push per increment; each must see every counter only grow and end at
# COUNT, its one-shot fire once, its recurrent watcher run until removed.
# Phase 2 (kill): members push a counter every 200 ms; member N is killed
# with kill -9; every survivor must suspect it within 2 x the timeout of
# the kill, and keep seeing the other survivors' counters advance.
# Phase 3 (stop): the same with SIGSTOP, which leaves the connections up:
# only the heartbeat tells.
# Phase 4 (garbage): member N turns into a broken writer: it writes random
# bytes over its counter's segment in every peer's table while its
# heartbeat goes on; every survivor must suspect it, for a row that does
# not validate, within 2 x the timeout of the first garbage.
set -u
N=${N:?N must be set}
COUNT=${SST_TEST_COUNT:-100000}
TIMEOUT_MS=${SST_TEST_TIMEOUT_MS:-2000}
MEMBER=${BUILD:?BUILD must name the build folder}/tests/vm/sst_member
[ -x "$MEMBER" ] || { echo "FAIL: $MEMBER is not built" >&2; exit 1; }
OUT=$(mktemp -d /tmp/squall-sst-test.XXXXXX)
. "$SRC/tests/vm/lib.sh"

members() { # BASEPORT
    local i args=""
    for i in $(seq 1 "$N"); do args="$args --member $i,10.77.0.$i,$(($1 + i))"; done
    echo "$args"
}

start() { # PHASE ID ARGS...
    local phase=$1 id=$2
    shift 2
    "$MEMBER" --id "$id" "$@" >"$OUT/$phase.$id.out" 2>"$OUT/$phase.$id.err" &
    PID[$id]=$!
}

fail() {
    echo "FAIL: $*"
    for f in "$OUT"/*.out; do
        echo "--- $f"; cat "$f"; echo "--- ${f%.out}.err"; cat "${f%.out}.err"
    done
    exit 1
}

# --- phase 1: counters ------------------------------------------------------
M=$(members 7700)
t0=$(date +%s)
for i in $(seq 1 "$N"); do
    start counters "$i" $M --mode counters --count "$COUNT" --timeout-ms 5000
done
for i in $(seq 1 "$N"); do
    finish "$i" 900
    [ "$RC" = 0 ] || fail "counters: member $i exited with status $RC"
done
t1=$(date +%s)
for i in $(seq 1 "$N"); do
    f="$OUT/counters.$i.out"
    want=$(printf "$COUNT%.0s," $(seq 1 "$N")); want=${want%,}
    grep -q "^RESULT member=$i counters=$want violations=0 " "$f" ||
        fail "counters: member $i did not see every counter end at $COUNT without going back"
    grep -q " watch_runs_after_remove=0 oneshot_fired=1 inc_fires=$COUNT\$" "$f" ||
        fail "counters: member $i: recurrent/one-shot predicate counts are wrong"
    grep -q "^PASS member=$i\$" "$f" || fail "counters: member $i did not pass"
    grep RESULT "$f"; grep STATS "$f"
done
echo "counters: $N members x $COUNT increments, all seen, in $((t1 - t0)) s"

# --- phases 2 and 3: one member fails ----------------------------------------
# fail_one SIGNAL BASEPORT WHY: members push a counter every 200 ms; member N
# gets SIGNAL (KILL: the process and its connections die; STOP: it freezes,
# its connections stay up and only its heartbeat stops). Every survivor
# must suspect it within 2 x the timeout, for a reason matching WHY (its
# own finding, or a suspicion learnt from another survivor's row), and
# keep seeing the other survivors' counters advance.
fail_one() {
    local sig=$1 port=$2 why=$3 i n t f line at delay adv sig_ms mode
    local limit=$((2 * TIMEOUT_MS)) M
    M=$(members "$port")
    for i in $(seq 1 "$N"); do
        mode=suspect
        [ "$sig" = GARBAGE ] && [ "$i" = "$N" ] && mode=garbage
        start "$sig" "$i" $M --mode $mode --timeout-ms "$TIMEOUT_MS" --heartbeat-ms 100 --period-us 200000 --after-ms 3000
    done
    for t in $(seq 1 1200); do
        n=$(cat "$OUT"/"$sig".*.out 2>/dev/null | grep -c "^READY" || true)
        [ "$n" = "$N" ] && break
        sleep 0.1
    done
    [ "$n" = "$N" ] || fail "$sig: the members did not all start within 120 s"
    sleep 2
    if [ "$sig" = GARBAGE ]; then
        # Member N says when its first garbage goes out.
        for t in $(seq 1 600); do
            line=$(grep -m1 "^GARBAGE member=$N " "$OUT/$sig.$N.out") && break
            sleep 0.1
        done
        [ -n "$line" ] || fail "$sig: member $N never started writing garbage"
        sig_ms=$(echo "$line" | sed 's/.* at_ms=\([0-9]*\).*/\1/')
    else
        # The time comes from bash itself (no fork), just before the signal.
        sig_ms=$(( ${EPOCHREALTIME/./} / 1000 ))
        kill -"$sig" "${PID[$N]}"
    fi
    for i in $(seq 1 $((N - 1))); do
        finish "$i" 120
        [ "$RC" = 0 ] || fail "$sig: survivor $i exited with status $RC"
    done
    kill -9 "${PID[$N]}" 2>/dev/null
    wait "${PID[$N]}" 2>/dev/null
    unset "PID[$N]"
    # No suspicion may come before the failure. The garbage writer starts
    # on its own clock (2 s after its READY), so a look at the outputs
    # after a sleep would race it on a loaded machine: compare times.
    # Every member runs in the same kernel, on the same clock.
    for f in "$OUT"/"$sig".*.out; do
        grep "^SUSPECT " "$f" | while read -r line; do
            at=$(echo "$line" | sed 's/.* at_ms=\([0-9]*\).*/\1/')
            [ "$at" -ge "$sig_ms" ] || echo "$line"
        done
    done > "$OUT/$sig.early"
    [ -s "$OUT/$sig.early" ] && fail "$sig: a suspicion before any member failed: $(cat "$OUT/$sig.early")"
    for i in $(seq 1 $((N - 1))); do
        f="$OUT/$sig.$i.out"
        line=$(grep -m1 "^SUSPECT member=$i rank=$((N - 1)) id=$N " "$f") ||
            fail "$sig: member $i never suspected member $N"
        at=$(echo "$line" | sed 's/.* at_ms=\([0-9]*\).*/\1/')
        delay=$((at - sig_ms))
        echo "$sig: member $i suspected member $N after $delay ms: ${line#*why=}"
        [ "$delay" -ge 0 ] && [ "$delay" -le "$limit" ] ||
            fail "$sig: member $i suspected member $N after $delay ms (limit $limit)"
        echo "$line" | grep -Eq "why=$why" || fail "$sig: member $i: reason is not /$why/"
        grep "^SUSPECT member=$i " "$f" | grep -v " id=$N " &&
            fail "$sig: member $i suspected a survivor"
        adv=$(grep -c "^ADVANCED member=$i " "$f")
        [ "$adv" = $((N - 2)) ] || fail "$sig: member $i reported $adv advancing peers, want $((N - 2))"
        grep "^ADVANCED member=$i " "$f"
        grep -q "^PASS member=$i\$" "$f" || fail "$sig: member $i: survivors did not keep advancing"
    done
}

fail_one KILL 7800 "."
fail_one STOP 7900 "no heartbeat from member $N|suspected by member"
grep -q "^SUSPECT member=[0-9]* rank=$((N - 1)) id=$N .*why=no heartbeat from member $N" "$OUT"/STOP.*.out ||
    fail "STOP: no survivor suspected member $N for its silent heartbeat"
fail_one GARBAGE 8000 "member $N's row has not validated|suspected by member"
grep -q "^SUSPECT member=[0-9]* rank=$((N - 1)) id=$N .*why=member $N's row has not validated" "$OUT"/GARBAGE.*.out ||
    fail "GARBAGE: no survivor suspected member $N for its row failing its checks"
echo "PASS: $N members: counters to $COUNT; kill -9, SIGSTOP and garbage writes of member $N suspected by every survivor within $((2 * TIMEOUT_MS)) ms; survivors kept pushing"
