#!/usr/bin/env bash
# squall-bench: vm 4
# Membership: how long a group of 4 takes to go on without a member killed
# with kill -9 while every member streams ordered messages (small ones on
# SMC, 200 KB ones on RDMC), and whether anything is lost or delivered
# twice on the way. Each round starts 4 view_member processes
# (tests/vm/view_member.c, through tests/vm/view_common.sh), lets them
# stream for BEFORE s, kills member VICTIM, waits until every survivor has
# installed the next view, lets them stream AFTER s more, and closes.
# Figures per survivor: kill to its new view (wall clock, the VIEW line
# against the kill), the group's own wedge-to-installed time
# (last_view_change_ms), messages sent, delivered and resent after the
# trim, duplicates and gaps seen. The view change time of a round is the
# last survivor's; the summary gives the median over rounds, and lost and
# duplicated summed over all rounds (lost: messages a live sender sent
# that a survivor never delivered).
set -u
N=4
ROUNDS=${MEMBERSHIP_ROUNDS:-3}
VICTIM=${MEMBERSHIP_VICTIM:-2}
# Suspicion at 3 s: at 1 s a member that was merely late on the VM's
# emulated CPUs was suspected under this load.
SETS=${MEMBERSHIP_SETS:-sst.suspect_timeout_ms=3000}
RATE=${MEMBERSHIP_RATE:-200}
BEFORE=${MEMBERSHIP_BEFORE_S:-3}
AFTER=${MEMBERSHIP_AFTER_S:-3}
. "$SRC/tests/vm/view_common.sh"
surv=$(seq 0 $((N - 1)) | grep -vx "$VICTIM" | tr '\n' ' ')
surv=${surv% }
echo "# logs: $OUT"
echo "# $VM_MEMBER --config $CFG --id I --rate $RATE$(for s in $SETS; do echo -n " --set $s"; done)"
echo "# sizes cycled 64,1000,4000,200000,8000; kill -9 member $VICTIM after $BEFORE s; $ROUNDS rounds"

rows=()
view_ms=()
lost=0
dups=0
for r in $(seq 1 "$ROUNDS"); do
    name=r$r
    start_members "$name"
    sleep "$BEFORE"
    kill_member "$VICTIM"
    wait_views "$name" "$surv" 1 300
    sleep "$AFTER"
    stop_streaming "$name"
    for i in $surv; do
        finish "$i" 300
        # 1: the member saw damage, duplicates or gaps: counted below.
        [ "$RC" = 0 ] || [ "$RC" = 1 ] || fail "$name: member $i exited with status $RC"
        grep -q "^RESULT member=$i " "$OUT/$name.$i.out" ||
            fail "$name: member $i printed no result"
    done
    measure_survivors "$name" "$surv" "$VICTIM" "${KILL_MS[$VICTIM]}"
    view_ms+=("$VIEW_MS")
    lost=$((lost + LOST))
    dups=$((dups + DUPS))
    for i in $surv; do
        f=$OUT/$name.$i.out
        rows+=("$(printf "%-6s %-7s %10s %10s %8s %10s %7s %5s %5s %5s" "$r" "$i" \
            $(( $(first_view_ms "$f" 1) - KILL_MS[$VICTIM] )) "$(val0 "$f" RESULT view_change_ms)" \
            "$(val0 "$f" RESULT sent)" "$(val0 "$f" RESULT delivered)" "$(val0 "$f" STATS resent)" \
            "$(val0 "$f" RESULT dup)" "$(val0 "$f" RESULT gap)" "$(val0 "$f" RESULT bad)")")
    done
    echo "# round $r: view change ${VIEW_MS} ms (last survivor), lost $LOST, duplicated $DUPS, gaps $GAPS, damaged $BAD"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
med=$(median "${view_ms[@]}")

echo
echo "Membership: kill -9 of member $VICTIM of $N while all stream at $RATE msgs/s each ($SETS)"
printf "%-6s %-7s %10s %10s %8s %10s %7s %5s %5s %5s\n" round member kill_to_ms wedge_ms sent delivered resent dup gap bad
printf '%s\n' "${rows[@]}"
printf "%-44s %s\n" "view change per round, ms (last survivor)" "${view_ms[*]}"
printf "%-44s %s\n" "view change, median of rounds, ms" "$med"
printf "%-44s %s\n" "messages of live senders lost (all rounds)" "$lost"
printf "%-44s %s\n" "messages delivered twice (all rounds)" "$dups"
echo "SUMMARY membership view_change_ms=$med lost=$lost duplicated=$dups members=$N"
