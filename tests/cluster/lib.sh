# Sourced by the cluster tests (tests/cluster/*.sh): run one member per VM
# of scripts/softroce-cluster, drive the runs and the link faults from the
# host, and judge what the members wrote. The member programs and the
# checks are those of the vm suite (tests/vm/view_common.sh: view_member,
# vs_check, check_survivors); only where the members run differs: each in
# a VM of its own, on its own rxe device and NIC, behind a bridge.
# Callers set N (members) and optionally CFG, SETS, RATE.
set -u
N=${N:?N must be set}
CFG=${CFG:-$SRC/conf/cluster-$N.cfg}
. "$SRC/tests/vm/view_common.sh"
CLUSTER=$SRC/scripts/softroce-cluster
CTL=$OUT/ctl
CPID=
T0=$SECONDS

cluster_cleanup() {
    if [ -n "$CPID" ] && kill -0 "$CPID" 2>/dev/null; then
        kill -TERM "$CPID" 2>/dev/null
        wait "$CPID" 2>/dev/null
    fi
    if [ "${KEEP:-0}" = 1 ]; then echo "(outputs kept in $OUT)"; else rm -rf "$OUT"; fi
}
trap cluster_cleanup EXIT
trap 'exit 130' INT TERM

# A failure also shows the cluster's own output.
fail() {
    KEEP=1
    echo "FAIL: $*"
    for f in "$OUT"/*.out; do
        [ -e "$f" ] || continue
        echo "--- $f"; cat "$f"; echo "--- ${f%.out}.err"; cat "${f%.out}.err"
    done
    echo "--- cluster"; cat "$OUT/cluster.log" 2>/dev/null
    exit 1
}

# start_cluster SECS RUN... -- PROGRAM ARG...: boots the N VMs (the whole
# run must end within SECS), each running tests/cluster/member.sh OUT
# RUN... -- PROGRAM ARG...; returns once every VM is up.
start_cluster() {
    local secs=$1
    shift
    "$CLUSTER" -n "$N" -t "$secs" -c "$CTL" -- bash "$SRC/tests/cluster/member.sh" "$OUT" "$@" \
        >"$OUT/cluster.log" 2>&1 &
    CPID=$!
    local end=$((SECONDS + 600))
    until [ -e "$CTL/go" ]; do
        kill -0 "$CPID" 2>/dev/null || fail "the cluster ended before every VM was up"
        [ "$SECONDS" -lt "$end" ] || fail "the VMs were not up within 600 s"
        sleep 0.2
    done
    echo "ok: $N VMs up: boot ms per member: $(cat "$CTL/boot_ms" 2>/dev/null) (+$((SECONDS - T0)) s)"
}

# go RUN: the members start run RUN.
go() { : >"$OUT/$1.go"; }

# ready RUN SECS: every member printed READY in run RUN (view_member).
ready() {
    local i
    for i in $(seq 0 $((N - 1))); do
        wait_line "$OUT/$1.$i.out" "^READY member=$i\$" "$2" ||
            fail "$1: member $i was not ready within $2 s"
    done
    echo "ok: $1: all $N members ready (+$((SECONDS - T0)) s)"
}

# fault OP ARG...: applies a fault; FAULT_MS is when it took effect.
fault() {
    local out
    out=$("$CLUSTER" fault "$CTL" "$@" 2>&1) || fail "fault $*: $out"
    FAULT_MS=$(echo "$out" | sed -n 's/.* wall_ms=\([0-9]*\).*/\1/p')
    echo "ok: $out (+$((SECONDS - T0)) s)"
}

# exited RUN MEMBERS SECS STATUS: each of MEMBERS ended run RUN within SECS
# with STATUS (a list of allowed statuses, e.g. "0" or "3").
exited() {
    local run=$1 i rc end=$((SECONDS + $3))
    for i in $2; do
        until [ -s "$OUT/$run.$i.rc" ]; do
            [ "$SECONDS" -lt "$end" ] || fail "$run: member $i did not finish within $3 s"
            kill -0 "$CPID" 2>/dev/null || [ -s "$OUT/$run.$i.rc" ] ||
                fail "$run: the cluster ended before member $i finished"
            sleep 0.2
        done
        rc=$(cat "$OUT/$run.$i.rc")
        case " $4 " in *" $rc "*) ;; *) fail "$run: member $i exited with status $rc, not $4" ;; esac
    done
    echo "ok: $run: members $2 exited with status $4 (+$((SECONDS - T0)) s)"
}

# end_cluster SECS: the cluster exits within SECS; CLUSTER_RC its status.
end_cluster() {
    local end=$((SECONDS + $1))
    while kill -0 "$CPID" 2>/dev/null; do
        [ "$SECONDS" -lt "$end" ] || fail "the cluster did not end within $1 s"
        sleep 0.2
    done
    CLUSTER_RC=0
    wait "$CPID" || CLUSTER_RC=$?
    CPID=
    echo "ok: the cluster ended with status $CLUSTER_RC (+$((SECONDS - T0)) s)"
}

# view_args ARG...: VIEW_ARGS, view_member's command line for start_cluster
# (as tests/vm/view_common.sh's start_members gives it): the SETS, --rate
# RATE, --stop-file OUT/RUN.stop, the history in OUT/RUN.ID.vlog, ARGs.
view_args() {
    local s
    VIEW_ARGS=("$VM_MEMBER" --config "$CFG")
    for s in $SETS; do VIEW_ARGS+=(--set "$s"); done
    VIEW_ARGS+=(--rate "$RATE" --secs 600 --stop-file "$OUT/@RUN@.stop" --log "$OUT/@RUN@.@ID@.vlog" "$@")
}

# no_view_change RUN: no member installed a view with epoch >= 1.
no_view_change() {
    if grep -E "^VIEW .* epoch=[1-9]" "$OUT/$1".*.out; then fail "$1: a member installed a new view"; fi
    echo "ok: $1: no member installed a view with epoch >= 1"
}

# stream RUN BYTES: every member streams in run RUN for STREAM_S s (as fast
# as the group takes it at a high RATE) and closes; no view change, and
# the run passes check_survivors. THRU_MSGS: the messages per second
# delivered at member 0; THRU_MBPS: MB (1e6 B) per second, BYTES being
# the mean message size.
stream() {
    local t0 ms d all
    all=$(seq 0 $((N - 1)) | tr '\n' ' ')
    go "$1"
    ready "$1" 180
    t0=$(now_ms)
    sleep "${STREAM_S:?}"
    stop_streaming "$1"
    exited "$1" "${all% }" 300 0
    ms=$(( $(now_ms) - t0 ))
    d=$(val "$OUT/$1.0.out" RESULT delivered)
    THRU_MSGS=$((d * 1000 / ms))
    THRU_MBPS=$(awk -v d="$d" -v b="$2" -v ms="$ms" 'BEGIN { printf "%.2f", d * b / ms / 1000 }')
    no_view_change "$1"
    check_survivors "$1" "${all% }" "" "$(echo ${all% } | tr ' ' ,)" 0
    echo "ok: $1: member 0 delivered $d messages in $ms ms: $THRU_MSGS msgs/s, about $THRU_MBPS MB/s"
}
