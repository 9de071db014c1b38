# Sourced by the view-change VM tests (view_*.sh) and bench/membership.sh:
# start view_member for every member of a conf/ group file, kill or stop
# some of them while all stream, wait for lines in their output, and check
# what the survivors printed (see tests/vm/view_member.c for the lines).
# Callers set N (members) and optionally CFG, SETS (--set strings) and
# RATE (messages/s per member).
set -u
N=${N:?N must be set}
CFG=${CFG:-$SRC/conf/local-$N.cfg}
VM_MEMBER=${VM_MEMBER:-${BUILD:?BUILD must name the build folder}/tests/vm/view_member}
[ -x "$VM_MEMBER" ] || { echo "FAIL: $VM_MEMBER is not built" >&2; exit 1; }
VS_CHECK=${VS_CHECK:-$BUILD/tests/vsync/vs_check}
[ -x "$VS_CHECK" ] || { echo "FAIL: $VS_CHECK is not built" >&2; exit 1; }
SETS=${SETS:-}
RATE=${RATE:-100}
# The transport's log lines on each member's stderr (view_member
# --transport-log: 0 errors, 1 with info, 2 with each connection event),
# shown with the rest when a test fails.
TRANSPORT_LOG=${TRANSPORT_LOG:-1}
OUT=$(mktemp -d /tmp/squall-view-test.XXXXXX)
. "$SRC/tests/vm/lib.sh"
# Kill times (ms) by member id, for the callers.
declare -A KILL_MS

fail() {
    echo "FAIL: $*"
    for f in "$OUT"/*.out; do
        [ -e "$f" ] || continue
        echo "--- $f"; cat "$f"; echo "--- ${f%.out}.err"; cat "${f%.out}.err"
    done
    exit 1
}

# Wall clock in ms from bash itself: forking date(1) takes longer under
# the emulated CPU than a whole view change.
now_ms() { local t=${EPOCHREALTIME/./}; echo "${t%???}"; }

# start_members NAME ARGS...: member i (0..N-1) runs view_member --config
# CFG --id i, the SETS, --rate RATE, --stop-file OUT/NAME.stop,
# --transport-log TRANSPORT_LOG, ARGS and the words of ${EXTRA[i]},
# output in OUT/NAME.i.out and .err, its history (tests/vsync/log.h) in
# OUT/NAME.i.vlog; returns once every member printed READY (fails after
# 180 s). Members stream until stop_streaming NAME (or their --secs, 600
# unless ARGS say otherwise).
start_members() {
    local name=$1 i
    shift
    rm -f "$OUT/$name.stop"
    for i in $(seq 0 $((N - 1))); do
        start_member "$name" "$i" "$@"
    done
    for i in $(seq 0 $((N - 1))); do
        wait_line "$OUT/$name.$i.out" "^READY member=$i\$" 180 "${PID[$i]}" ||
            fail "$name: member $i did not start within 180 s"
    done
}

# start_member NAME I ARGS...: member I alone, as start_members starts
# each (a joiner, started after the others); does not wait for it.
start_member() {
    local name=$1 i=$2 s set_args=()
    shift 2
    for s in $SETS; do set_args+=(--set "$s"); done
    # shellcheck disable=SC2086
    "$VM_MEMBER" --config "$CFG" --id "$i" "${set_args[@]}" \
        --rate "$RATE" --secs 600 --stop-file "$OUT/$name.stop" \
        --log "$OUT/$name.$i.vlog" --transport-log "$TRANSPORT_LOG" \
        "$@" ${EXTRA[$i]:-} \
        >"$OUT/$name.$i.out" 2>"$OUT/$name.$i.err" &
    PID[$i]=$!
}

# check_p2p NAME I J: each of member I's point-to-point messages to
# member J (--p2p-flood) arrived or was reported through send_failed: J
# received no more than I sent, and that with what I was told failed
# covers all I sent.
check_p2p() {
    local name=$1 from=$2 to=$3 sent failed got
    getv0 sent "$OUT/$name.$from.out" "P2P " sent
    getv0 failed "$OUT/$name.$from.out" "P2P " failed
    getv0 got "$OUT/$name.$to.out" "P2PFROM member=$to sender=$from " count
    [ "$got" -le "$sent" ] && [ $((got + failed)) -ge "$sent" ] ||
        fail "$name: member $from's $sent point-to-point messages to member $to were accepted and $failed reported failed; member $to received $got"
    echo "ok: $name: member $from -> $to: $sent point-to-point messages, $got received, $failed reported failed (send_failed)"
}

# stop_streaming NAME: every member still running stops sending and closes.
stop_streaming() { touch "$OUT/$1.stop"; }

# kill_member I: kill -9 member I and reap it (quietly: no job notice);
# KILL_MS[I] is the time, taken just before the kill.
kill_member() {
    local t=${EPOCHREALTIME/./}
    kill -9 "${PID[$1]}" 2>/dev/null ||
        fail "member $1 had exited before it was to be killed: $(grep -h "^STOPPED" "$OUT"/*."$1".out)"
    KILL_MS[$1]=${t%???}
    { wait "${PID[$1]}"; } 2>/dev/null
    unset "PID[$1]"
}

# reap_member NAME I: member I killed itself (view_member --die-*): reap it
# quietly and take the time of its DYING line as KILL_MS[I].
reap_member() {
    local name=$1
    shift
    { wait "${PID[$1]}"; } 2>/dev/null
    unset "PID[$1]"
    # shellcheck disable=SC2034
    KILL_MS[$1]=$(val "$OUT/$name.$1.out" "DYING " wall_ms)
    # A test hook's DYING line (view_member --die-at) is on stderr.
    [ -n "${KILL_MS[$1]}" ] || KILL_MS[$1]=$(val "$OUT/$name.$1.err" "DYING " wall_ms)
}

# wait_any REGEX SECS PIDS FILE...: as wait_line, for a line in any of
# the FILEs, looking every 20 ms (to act while a view change is under
# way); 1 at once when none of PIDS (space-separated) runs any more.
# Prints the first matching line.
wait_any() {
    local re=$1 end=$((SECONDS + $2)) pids=$3 p alive
    shift 3
    until grep -Ehs "$re" "$@" | head -n1 | grep .; do
        [ "$SECONDS" -lt "$end" ] || return 1
        alive=0
        for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
        if [ "$alive" = 0 ]; then
            grep -Ehs "$re" "$@" | head -n1 | grep .
            return
        fi
        sleep 0.02
    done
}

# stop_note NAME I: why member I ended early, if it did (for fail).
stop_note() {
    kill -0 "${PID[$2]:-0}" 2>/dev/null && return
    echo "; it exited: $(grep "^STOPPED" "$OUT/$1.$2.out" || echo "no STOPPED line")"
}

# wait_views NAME MEMBERS EPOCH SECS: every member in MEMBERS (ids,
# space-separated) printed a VIEW with an epoch >= EPOCH.
wait_views() {
    local name=$1 i re
    re="^VIEW member=[0-9]+ epoch=([1-9][0-9]+|[$3-9]) "
    [ "$3" -le 9 ] || fail "wait_views: epoch $3 is beyond what it matches"
    for i in $2; do
        wait_line "$OUT/$name.$i.out" "$re" "$4" "${PID[$i]:-}" ||
            fail "$name: member $i installed no view with epoch >= $3 within $4 s$(stop_note "$name" "$i")"
    done
}

# finish_members NAME MEMBERS SECS STATUS: each of MEMBERS exits within
# SECS with STATUS.
finish_members() {
    local name=$1 i
    for i in $2; do
        finish "$i" "$3"
        [ "$RC" = "$4" ] || fail "$name: member $i exited with status $RC, not $4"
    done
}

# The readers below run no process: under the VM's emulated CPU each
# fork and exec costs tens of milliseconds, and a round's checks read a
# few hundred values.

# getv VAR FILE PREFIX KEY: sets VAR to KEY= of the first line of FILE
# that matches the extended regex ^PREFIX (empty when there is none, or
# that line has no KEY).
getv() {
    local _gl _gre="^$3"
    printf -v "$1" '%s' ""
    [ -r "$2" ] || return 0
    while IFS= read -r _gl || [ -n "$_gl" ]; do
        [[ $_gl =~ $_gre ]] || continue
        keyv "$1" "$_gl" "$4"
        return 0
    done <"$2"
}

# keyv VAR LINE KEY: sets VAR to KEY= of LINE (empty when it has none).
keyv() {
    local _kre=".* $3=([^ ]*)"
    printf -v "$1" '%s' ""
    [[ $2 =~ $_kre ]] && printf -v "$1" '%s' "${BASH_REMATCH[1]}"
    return 0
}

# getv0 VAR FILE PREFIX KEY: getv, 0 when there is no such value (a
# member that died before its result adds nothing to the sums below).
getv0() {
    getv "$@"
    [ -n "${!1}" ] || printf -v "$1" 0
}

# val FILE PREFIX KEY and val0 FILE PREFIX KEY: getv and getv0, printed.
val() {
    local v
    getv v "$@"
    echo "$v"
}
val0() {
    local v
    getv0 v "$@"
    echo "$v"
}

# getview VAR FILE EPOCH: sets VAR to wall_ms of FILE's first VIEW line
# with epoch >= EPOCH (empty when there is none). first_view_ms FILE
# EPOCH prints it.
getview() {
    local _gl _gre="^VIEW .* epoch=([0-9]+) " _gwre=" wall_ms=([0-9]+)"
    printf -v "$1" '%s' ""
    [ -r "$2" ] || return 0
    while IFS= read -r _gl || [ -n "$_gl" ]; do
        [[ $_gl =~ $_gre ]] && [ "${BASH_REMATCH[1]}" -ge "$3" ] || continue
        [[ $_gl =~ $_gwre ]] && printf -v "$1" '%s' "${BASH_REMATCH[1]}"
        return 0
    done <"$2"
}
first_view_ms() {
    local v
    getview v "$@"
    echo "$v"
}

# measure_survivors NAME SURVIVORS DEAD SINCE_MS: the figures of a run,
# without judging them. VIEW_MS: the longest time from SINCE_MS until a
# survivor installed its first view with epoch >= 1 (empty when one never
# did); LOST: messages of live senders that some survivor did not deliver,
# summed over survivors; DUPS, GAPS, BAD: summed over survivors.
measure_survivors() {
    local name=$1 surv=$2 since=$4 i j sent from t
    VIEW_MS=0 LOST=0 DUPS=0 GAPS=0 BAD=0
    for i in $surv; do
        local f=$OUT/$name.$i.out v
        getview t "$f" 1
        if [ -z "$t" ]; then VIEW_MS=; elif [ -n "$VIEW_MS" ] && [ $((t - since)) -gt "$VIEW_MS" ]; then
            VIEW_MS=$((t - since))
        fi
        getv0 v "$f" RESULT dup
        DUPS=$((DUPS + v))
        getv0 v "$f" RESULT gap
        GAPS=$((GAPS + v))
        getv0 v "$f" RESULT bad
        BAD=$((BAD + v))
        for j in $surv; do
            getv0 sent "$OUT/$name.$j.out" RESULT sent
            getv0 from "$f" "FROM member=$i sender=$j " count
            [ "$from" -ge "$sent" ] || LOST=$((LOST + sent - from))
        done
    done
}

# judge NAME DEAD: the members' histories of run NAME (OUT/NAME.*.vlog),
# judged by vs_check (tests/vsync/check.h: the same sequence per view at
# every survivor, a dead or stopped member's deliveries a prefix of
# theirs, every message of a live sender delivered exactly once at every
# member that stayed, the same prefix of a dead sender everywhere, views
# and positions agreed, every member ended); DEAD (ids) were killed.
judge() {
    local name=$1 dead=$2 j args=() verdict
    for j in $dead; do args+=(--crashed "$j"); done
    verdict=$("$VS_CHECK" "${args[@]}" "$OUT/$name".*.vlog 2>&1) ||
        fail "$name: vs_check found violations in the members' histories:
$verdict"
    echo "ok: $name: $(echo "$verdict" | tail -n1)"
}

# check_survivors NAME SURVIVORS DEAD MEMBERS SINCE_MS [BOUND_MS]: the
# survivors (ids, space-separated; they have exited) agree and lost
# nothing:
#  - each printed its RESULT with bad=0 dup=0 gap=0 (every byte checked,
#    each sender's counters in order);
#  - their histories pass vs_check (judge above);
#  - every survivor's last view has the members MEMBERS (e.g. 0,1,3).
# With DEAD not empty, prints the view-change time (SINCE_MS until the
# last survivor installed a view with epoch >= 1), which must be under
# BOUND_MS when given.
check_survivors() {
    local name=$1 surv=$2 dead=$3 members=$4 since=$5 bound=${6:-} i j k v
    local line result last sent=""
    for i in $surv; do
        local f=$OUT/$name.$i.out
        result="" last=""
        while IFS= read -r line || [ -n "$line" ]; do
            case $line in
            "RESULT member=$i "*) [ -n "$result" ] || result=$line ;;
            "VIEW "*) last=$line ;;
            "FAILURE member=$i failed="*)
                # The failure upcall names only members that were removed.
                j=${line#"FAILURE member=$i failed="} j=${j%% *}
                case " $dead " in *" $j "*) ;; *)
                    fail "$name: member $i reported member $j failed, which was not killed: $line" ;;
                esac ;;
            esac
        done <"$f"
        [ -n "$result" ] || fail "$name: member $i printed no result"
        for k in bad dup gap overlaps; do
            keyv v "$result" $k
            [ "$v" = 0 ] || fail "$name: member $i: $k=$v (see its .err)"
        done
        keyv last "$last" members
        [ "$last" = "$members" ] ||
            fail "$name: member $i's last view has members $last, not $members"
        keyv v "$result" sent
        sent="$sent$i:$v "
    done
    judge "$name" "$dead"
    echo "ok: $name: sent: $sent"
    [ -n "$dead" ] || return 0
    measure_survivors "$name" "$surv" "$dead" "$since"
    [ -n "$VIEW_MS" ] || fail "$name: a survivor installed no view with epoch >= 1"
    local per="" stats="" t
    for i in $surv; do
        getview t "$OUT/$name.$i.out" 1
        getv v "$OUT/$name.$i.out" RESULT view_change_ms
        per="$per$i:$((t - since)) " stats="$stats$i:$v "
    done
    echo "ok: $name: view change: kill to the last survivor's new view $VIEW_MS ms" \
        "(per survivor: ${per}ms; stats last_view_change_ms: $stats)"
    [ -z "$bound" ] || [ "$VIEW_MS" -le "$bound" ] ||
        fail "$name: the view change took $VIEW_MS ms, over the bound of $bound ms"
    check_parts "$name" "$surv"
}

# check_parts NAME SURVIVORS: each survivor's last view change splits into
# parts (group_stats last_view_change_*) that add up to no more than the
# whole, the connections within the build and the application's upcalls
# within the delivery; printed for each.
check_parts() {
    local name=$1 i f total a d t b c u parts=""
    for i in $2; do
        f=$OUT/$name.$i.out
        getv0 total "$f" RESULT view_change_ms
        getv0 a "$f" RESULT agree_ms
        getv0 d "$f" RESULT deliver_ms
        getv0 t "$f" RESULT teardown_ms
        getv0 b "$f" RESULT build_ms
        getv0 c "$f" RESULT connect_ms
        getv0 u "$f" RESULT upcall_ms
        [ $((a + d + t + b)) -le "$total" ] ||
            fail "$name: member $i: the view change's parts (agree $a, deliver $d, teardown $t, build $b ms) add up to more than its $total ms"
        [ "$c" -le "$b" ] ||
            fail "$name: member $i: connecting took $c ms of a build of $b ms"
        [ "$u" -le "$d" ] ||
            fail "$name: member $i: the trim's deliver upcalls took $u ms of a delivery of $d ms"
        parts="$parts $i:$a+$d($u)+$t+$b($c)/$total"
    done
    echo "ok: $name: view change parts, ms (agree+deliver(upcalls)+teardown+build(connect)/whole):$parts"
}

# check_unsent NAME STOPPED SURVIVORS: member STOPPED (its group
# stopped; it has exited) learnt of each of its sends exactly once: the
# SURVIVORS (ids, space-separated) all delivered its first K messages,
# and its send_failed upcalls (UNSENT line) told of every later one as
# lost (-ENOTCONN: a survivor's trim reached it, or the message was
# waiting to be sent again), from counter K; of none, with no UNSENT
# line, when K is every one it sent.
check_unsent() {
    local name=$1 w=$2 surv=$3 i k sent lost unknown first
    for i in $surv; do
        if [ -z "${k:-}" ]; then
            k=$(val "$OUT/$name.$i.out" "FROM member=$i sender=$w " count)
        elif [ "$(val "$OUT/$name.$i.out" "FROM member=$i sender=$w " count)" != "$k" ]; then
            fail "$name: the survivors delivered different numbers of member $w's messages"
        fi
    done
    sent=$(val "$OUT/$name.$w.out" RESULT sent)
    if ! grep -q "^UNSENT member=$w " "$OUT/$name.$w.out"; then
        # Its device may have carried every message it had posted, and
        # it sent no more: the trim holds them all, and nothing is lost.
        [ "$k" = "$sent" ] ||
            fail "$name: member $w was told of no lost send (the others delivered $k of its $sent)"
        echo "ok: $name: the survivors delivered all $sent of member $w's messages; member $w was told of none lost"
        return 0
    fi
    lost=$(val "$OUT/$name.$w.out" UNSENT lost)
    unknown=$(val "$OUT/$name.$w.out" UNSENT unknown)
    first=$(val "$OUT/$name.$w.out" UNSENT first)
    [ "$unknown" = 0 ] ||
        fail "$name: member $w could not tell $unknown sends (no survivor's trim reached it)"
    [ "$first" = "$k" ] && [ $((k + lost)) = "$sent" ] ||
        fail "$name: the survivors delivered member $w's messages 0..$((k - 1)) of $sent; it was told of $lost lost from $first"
    echo "ok: $name: the survivors delivered $k of member $w's $sent messages; member $w was told the other $lost are lost, from counter $first ($(grep "^UNSENT member=$w " "$OUT/$name.$w.out" | sed 's/.* why=//'))"
}

# wait_members_view NAME SURVIVORS MEMBERS: each survivor installs a view
# of exactly MEMBERS (comma-separated) within 180 s.
wait_members_view() {
    local name=$1 members=$3 i
    for i in $2; do
        wait_line "$OUT/$name.$i.out" "^VIEW member=$i epoch=[0-9]+ members=$members " 180 "${PID[$i]}" ||
            fail "$name: member $i installed no view with members $members within 180 s$(stop_note "$name" "$i")"
    done
}

# end_round NAME SURVIVORS DEAD MEMBERS: each survivor installs a view of
# exactly MEMBERS (within 180 s), streams 3 s more and closes; then
# check_survivors, the view change timed from KILL_MS of the first of DEAD
# (ids, space-separated).
end_round() {
    local name=$1 surv=$2 dead=$3 members=$4
    wait_members_view "$name" "$surv" "$members"
    sleep 3
    stop_streaming "$name"
    finish_members "$name" "$surv" 300 0
    check_survivors "$name" "$surv" "$dead" "$members" "${KILL_MS[${dead%% *}]}"
}
