# RDMC and SMC in one order through the group API, 4 members (see
# group_common.sh): members 0 and 1 each send 1, 3.5, 16 and 64 MiB
# messages (3.5 MiB is not a multiple of the 1 MiB block) with five small
# messages after each; every member delivers one sequence, every byte
# checked, 0 copies. The suspicion timeout is raised for this test only:
# 64 MiB moves through emulated RDMA on a shared host, and a starved
# member must not be taken for a dead one.
N=4
. "$SRC/tests/vm/group_common.sh"

run_members mixed 1100 "$GM" --senders 2 --count 24 \
    --sizes 1048576,3670016,16777216,67108864 --smc-between 5 \
    --set sst.suspect_timeout_ms=10000
check_order mixed
echo "PASS"
