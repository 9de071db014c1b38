# SST with 3 members: counters, predicates, and kill -9 suspicion (see sst_common.sh).
N=3
. "$SRC/tests/vm/sst_common.sh"
