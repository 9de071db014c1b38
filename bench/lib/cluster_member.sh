# bench/lib/cluster_member.sh RUN PROGRAM ARG...: one member's run of
# bench/cluster.sh in its cluster VM (through tests/cluster/member.sh):
# PROGRAM (view_member) with the message sizes of RUN: smc_* 1000 bytes
# (the SMC ring), rdmc_* 200000 bytes (RDMC), any other view_member's own.
run=$1
shift
case "$run" in
smc_*) exec "$@" --sizes 1000 ;;
rdmc_*) exec "$@" --sizes 200000 ;;
*) exec "$@" ;;
esac
