# SST with 5 members: counters, predicates, and kill -9 suspicion (see sst_common.sh).
N=5
. "$SRC/tests/vm/sst_common.sh"
