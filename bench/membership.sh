#!/usr/bin/env bash
# squall-bench: vm 4
# squall-bench: test-hooks
# Membership: how long a group of 4 takes to go on without a member that
# died while every member streams ordered messages (small ones on SMC,
# 200 KB ones on RDMC in 64 KB blocks), and whether anything is lost or
# delivered twice on the way. Rounds cycle through six ways to die:
#   leader       kill -9 of member 0, the view change's leader, after BEFORE s
#   nonleader    kill -9 of member 2 after BEFORE s
#   published    member 3 leaves in order after BEFORE s; the leader,
#                member 0, dies right after pushing its trim
#   adopted      as published, member 1 dies right after adopting it
#   installing   as published, member 2 dies with its old view torn down
#                and the next not built
#   rdmc_mid     member 1 dies holding half the blocks of its 10th large
#                message
# (the last four at named protocol points of a test-hook build:
# view_member --die-at, rdma/hook.h; a member that leaves in order counts
# on neither side of the majority, so the survivors keep one). Each round
# starts 4 view_member processes (tests/vm/view_member.c, through
# tests/vm/view_common.sh), waits until every survivor installed the view
# of exactly the survivors, lets them stream AFTER s more and closes.
# Figures per survivor: death to that view (wall clock, the VIEW line
# against the DYING line or the kill), of which detect is the part before
# the view change began (the dying process's exit, the peers noticing it,
# the suspicion reaching this survivor), the group's own wedge-to-installed
# time of its last change (last_view_change_ms) and its parts (agreement,
# delivering to the trim, teardown, build and, of the build, connecting;
# of the delivery, the members' own deliver upcalls, which check every
# byte of each message: group_stats(3)), messages sent, delivered and
# resent after a trim, duplicates and gaps seen. A round's view change
# time is its last survivor's; the summary gives the median over rounds,
# lost and duplicated summed over all rounds (lost: messages a live
# sender, the leaver included, sent that a survivor never delivered), the
# virtual-synchrony violations vs_check found in the members' histories
# (tests/vsync/check.h), the upcalls that began while another ran on
# another thread (view_member's overlaps: group.h says none do), and each
# part's median over every survivor of every round.
set -u
N=4
ROUNDS=${MEMBERSHIP_ROUNDS:-12}
KINDS=(${MEMBERSHIP_KINDS:-leader nonleader published adopted installing rdmc_mid})
# Suspicion at 3 s: at 1 s a member that was merely late on the VM's
# emulated CPUs was suspected under this load.
SETS=${MEMBERSHIP_SETS:-sst.suspect_timeout_ms=3000 rdmc.block_size=64K}
RATE=${MEMBERSHIP_RATE:-200}
BEFORE=${MEMBERSHIP_BEFORE_S:-3}
AFTER=${MEMBERSHIP_AFTER_S:-3}
. "$SRC/tests/vm/view_common.sh"
echo "# logs: $OUT"
echo "# $VM_MEMBER --config $CFG --id I --rate $RATE$(for s in $SETS; do echo -n " --set $s"; done)"
echo "# sizes cycled 64,1000,4000,200000,8000; $ROUNDS rounds over: ${KINDS[*]}"

# kind K: VICTIM, POINT (empty: kill -9 from here), LEAVER (empty: none).
kind() {
    LEAVER= POINT=
    case "$1" in
    leader) VICTIM=0 ;;
    nonleader) VICTIM=2 ;;
    published) VICTIM=0 POINT=trim_published LEAVER=3 ;;
    adopted) VICTIM=1 POINT=trim_adopted LEAVER=3 ;;
    installing) VICTIM=2 POINT=installing LEAVER=3 ;;
    rdmc_mid) VICTIM=1 POINT=rdmc_mid:10 ;;
    *) fail "unknown kind $1" ;;
    esac
}

# view_of FILE MEMBERS: wall_ms of the first VIEW with exactly MEMBERS.
view_of() {
    grep -E "^VIEW .* members=$2 " "$1" | head -n1 | sed -n 's/.* wall_ms=\([0-9]*\).*/\1/p'
}

rows=()
csv_rows=()
view_ms=()
parts=()  # "agree deliver teardown build connect" (ms) of each survivor
detects=()  # death to the wedge (ms) of each survivor
lost=0 dups=0 violations=0 overlaps=0
for r in $(seq 1 "$ROUNDS"); do
    k=${KINDS[$(( (r - 1) % ${#KINDS[@]} ))]}
    kind "$k"
    name=r$r-$k
    surv=$(seq 0 $((N - 1)) | grep -vx "$VICTIM" | grep -vx "${LEAVER:-none}" | tr '\n' ' ')
    surv=${surv% }
    members=${surv// /,}
    EXTRA=()
    [ -z "$POINT" ] || EXTRA[$VICTIM]="--die-at $POINT"
    [ -z "$LEAVER" ] || EXTRA[$LEAVER]="--secs $BEFORE"
    start_members "$name"
    if [ -z "$POINT" ]; then
        sleep "$BEFORE"
        kill_member "$VICTIM"
    else
        wait_line "$OUT/$name.$VICTIM.err" "^DYING " 300 "${PID[$VICTIM]}" ||
            fail "$name: member $VICTIM did not reach $POINT within 300 s$(stop_note "$name" "$VICTIM")"
        reap_member "$name" "$VICTIM"
    fi
    if [ -n "$LEAVER" ]; then
        finish "$LEAVER" 300
        [ "$RC" = 0 ] || fail "$name: member $LEAVER, leaving, exited with status $RC"
    fi
    for i in $surv; do
        wait_line "$OUT/$name.$i.out" "^VIEW .* members=$members " 300 "${PID[$i]}" ||
            fail "$name: member $i installed no view of $members within 300 s$(stop_note "$name" "$i")"
    done
    sleep "$AFTER"
    stop_streaming "$name"
    for i in $surv; do
        finish "$i" 300
        # 1: the member saw damage, duplicates or gaps: counted below.
        [ "$RC" = 0 ] || [ "$RC" = 1 ] || fail "$name: member $i exited with status $RC"
        grep -q "^RESULT member=$i " "$OUT/$name.$i.out" ||
            fail "$name: member $i printed no result"
    done
    since=${KILL_MS[$VICTIM]}
    measure_survivors "$name" "$surv" "$VICTIM" "$since"
    if [ -n "$LEAVER" ]; then
        sent=$(val0 "$OUT/$name.$LEAVER.out" RESULT sent)
        for i in $surv; do
            from=$(val0 "$OUT/$name.$i.out" "FROM member=$i sender=$LEAVER " count)
            [ "$from" -ge "$sent" ] || LOST=$((LOST + sent - from))
        done
    fi
    verdict=$("$VS_CHECK" --crashed "$VICTIM" "$OUT/$name".*.vlog 2>&1)
    v=$(echo "$verdict" | sed -n 's/.* violations=\([0-9]*\).*/\1/p' | tail -n1)
    [ -n "$v" ] || fail "$name: vs_check printed no verdict: $verdict"
    last=0
    for i in $surv; do
        t=$(( $(view_of "$OUT/$name.$i.out" "$members") - since ))
        [ "$t" -le "$last" ] || last=$t
    done
    view_ms+=("$last")
    lost=$((lost + LOST))
    dups=$((dups + DUPS))
    violations=$((violations + v))
    for i in $surv; do
        f=$OUT/$name.$i.out
        # agree deliver teardown build connect upcall, ms (numbers: split
        # below)
        pv=$(for p in agree deliver teardown build connect upcall; do echo -n "$(val0 "$f" RESULT ${p}_ms) "; done)
        parts+=("$pv")
        overlaps=$((overlaps + $(val0 "$f" RESULT overlaps)))
        # Death to the wedge: the rest of death_to_ms before the
        # group's own wedge-to-installed time.
        det=$(( $(view_of "$f" "$members") - since - $(val0 "$f" RESULT view_change_ms) ))
        detects+=("$det")
        # shellcheck disable=SC2086
        rows+=("$(printf "%-16s %-7s %10s %6s %10s %6s %7s %8s %6s %7s %6s %8s %10s %7s %5s %5s %5s" "$r:$k" "$i" \
            $(( $(view_of "$f" "$members") - since )) "$det" "$(val0 "$f" RESULT view_change_ms)" $pv \
            "$(val0 "$f" RESULT sent)" "$(val0 "$f" RESULT delivered)" "$(val0 "$f" STATS resent)" \
            "$(val0 "$f" RESULT dup)" "$(val0 "$f" RESULT gap)" "$(val0 "$f" RESULT bad)")")
        # shellcheck disable=SC2086
        csv_rows+=("$(printf '%q ' "$r" "$k" "$i" $(( $(view_of "$f" "$members") - since )) \
            "$det" "$(val0 "$f" RESULT view_change_ms)" $pv "$(val0 "$f" RESULT sent)" \
            "$(val0 "$f" RESULT delivered)" "$(val0 "$f" STATS resent)" \
            "$(val0 "$f" RESULT dup)" "$(val0 "$f" RESULT gap)" "$(val0 "$f" RESULT bad)")")
    done
    echo "# round $r ($k: member $VICTIM${POINT:+ at $POINT}${LEAVER:+, member $LEAVER leaving}): view change $last ms (last survivor), lost $LOST, duplicated $DUPS, gaps $GAPS, damaged $BAD, vs_check violations $v"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
med=$(median "${view_ms[@]}")

echo
echo "Membership: a member of $N dies while all stream at $RATE msgs/s each ($SETS)"
printf "%-16s %-7s %10s %6s %10s %6s %7s %8s %6s %7s %6s %8s %10s %7s %5s %5s %5s\n" round member death_to_ms detect \
    wedge_ms agree deliver teardown build connect upcall sent delivered resent dup gap bad
printf '%s\n' "${rows[@]}"
# membership.csv: the table, one row per survivor of each round.
. "$SRC/bench/lib/csv.sh"
csv_dir membership
csv_header membership round kind member death_to_view_ms detect_ms wedge_to_installed_ms agree_ms \
    deliver_ms teardown_ms build_ms connect_ms upcall_ms sent delivered resent dup gap bad
for row in "${csv_rows[@]}"; do
    eval "csv_row membership $row"
done
printf "%-44s %s\n" "view change per round, ms (last survivor)" "${view_ms[*]}"
printf "%-44s %s\n" "view change, median of rounds, ms" "$med"
# partmed COLUMN: the median of that part (1 agree .. 5 connect, 6 the
# deliver upcalls) over every survivor of every round.
partmed() { median $(printf '%s\n' "${parts[@]}" | awk -v c="$1" '{ print $c }'); }
pm_agree=$(partmed 1) pm_deliver=$(partmed 2) pm_teardown=$(partmed 3)
pm_build=$(partmed 4) pm_connect=$(partmed 5) pm_upcall=$(partmed 6)
pm_detect=$(median "${detects[@]}")
printf "%-44s %s\n" "its parts, medians over survivors, ms" \
    "detect $pm_detect, then agree $pm_agree, deliver $pm_deliver (its upcalls $pm_upcall), teardown $pm_teardown, build $pm_build (connect $pm_connect)"
printf "%-44s %s\n" "messages of live senders lost (all rounds)" "$lost"
printf "%-44s %s\n" "messages delivered twice (all rounds)" "$dups"
printf "%-44s %s\n" "vs_check violations (all rounds)" "$violations"
printf "%-44s %s\n" "upcalls that overlapped another (all rounds)" "$overlaps"
echo "SUMMARY membership view_change_ms=$med lost=$lost duplicated=$dups violations=$violations overlaps=$overlaps members=$N rounds=$ROUNDS detect_ms=$pm_detect agree_ms=$pm_agree deliver_ms=$pm_deliver teardown_ms=$pm_teardown build_ms=$pm_build connect_ms=$pm_connect upcall_ms=$pm_upcall"
