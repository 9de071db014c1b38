# Member ids from the launcher (group_config_my_id): Open MPI's mpirun
# starts examples/kvstore three times with no --id and no
# SQUALL_MEMBER_ID; each process takes its rank (OMPI_COMM_WORLD_RANK) as
# the index of its member in conf/local-3.cfg, and the three agree on
# the table and the order, as under scripts/demo. A fourth rank is
# refused, saying the group file has three members.
N=3
. "$SRC/tests/vm/group_common.sh"
KV=$BUILD/examples/kvstore
MPIRUN=$(command -v mpirun) || fail "mpirun is not installed (openmpi-bin)"
unset SQUALL_MEMBER_ID
mpi() { # NP OUT: kvstore under mpirun with NP ranks
    "$MPIRUN" --allow-run-as-root --oversubscribe -np "$1" \
        --mca btl self --mca plm_rsh_agent false \
        "$KV" --config "$CFG" --random 2000 >"$OUT/$2.out" 2>"$OUT/$2.err"
}
mpi 3 mpi || fail "mpirun -np 3 kvstore failed"
for i in 0 1 2; do
    grep -q "^KVSTORE member=$i sent=2000 applied=6000 " "$OUT/mpi.out" ||
        fail "member $i (rank $i) did not apply all 6,000 commands"
done
n=$(sed -n 's/^KVSTORE .*\(state_hash=[0-9a-f]* order_hash=[0-9a-f]*\).*/\1/p' "$OUT/mpi.out" | sort -u | wc -l)
[ "$n" = 1 ] || fail "the three ranks ended with $n different tables or orders"
echo "ok: mpirun -np 3: ranks 0, 1, 2 ran members 0, 1, 2 with no --id and agree: $(sed -n 's/^KVSTORE member=0 .*\(state_hash=[0-9a-f]* order_hash=[0-9a-f]*\).*/\1/p' "$OUT/mpi.out")"
rc=0
mpi 4 four || rc=$?
[ "$rc" != 0 ] || fail "mpirun -np 4 with a group of 3 succeeded"
grep -q "rank 3 (from OMPI_COMM_WORLD_RANK) is beyond the 3 members of $CFG: start at most 3 processes" "$OUT/four.err" ||
    fail "rank 3 was not refused naming the group's 3 members: $(cat "$OUT/four.err")"
echo "ok: mpirun -np 4: rank 3 refused: $(grep -o 'rank 3 .*' "$OUT/four.err" | head -n1)"
echo "PASS"
