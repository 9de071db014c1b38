# tests/cluster/member.sh DIR NAME... -- PROGRAM ARG...: one member's part of
# a cluster test, run in its own VM by scripts/softroce-cluster.
#
# For each run NAME in turn: wait until DIR/NAME.go exists (the test on the
# host creates it), run PROGRAM ARG... --id $SQUALL_MEMBER_ID with "@RUN@"
# in an ARG replaced by NAME and "@ID@" by the member's id, output in
# DIR/NAME.ID.out and .err, its exit status in DIR/NAME.ID.rc. Exits with
# the highest status of its runs.
set -u
dir=$1
shift
names=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do names+=("$1"); shift; done
shift
id=${SQUALL_MEMBER_ID:?not in a cluster VM}
worst=0
for name in "${names[@]}"; do
    until [ -e "$dir/$name.go" ]; do sleep 0.2; done
    args=()
    for a in "$@"; do a=${a//@RUN@/$name}; args+=("${a//@ID@/$id}"); done
    rc=0
    "${args[@]}" --id "$id" >"$dir/$name.$id.out" 2>"$dir/$name.$id.err" || rc=$?
    echo "$rc" >"$dir/$name.$id.rc"
    echo "$name: member $id exited with status $rc"
    [ "$rc" -le "$worst" ] || worst=$rc
done
exit "$worst"
