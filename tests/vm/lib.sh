# Sourced by the VM test scripts that run member processes: the table of
# members started in the background (PID, by id), their cleanup on exit,
# finish, which waits for one with a deadline, and wait_line, which waits
# for a line in a member's output.
declare -A PID
cleanup() {
    for p in "${PID[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

# finish ID SECONDS: wait for member ID to exit within SECONDS; sets RC to
# its status (124 when it had to be killed). Not in a subshell: the member
# must be this shell's child.
finish() {
    local id=$1 limit=$2 t=0
    while kill -0 "${PID[$id]}" 2>/dev/null; do
        if [ "$t" -ge $((limit * 10)) ]; then
            kill -9 "${PID[$id]}" 2>/dev/null
            wait "${PID[$id]}" 2>/dev/null
            unset "PID[$id]"
            RC=124
            return
        fi
        sleep 0.1
        t=$((t + 1))
    done
    RC=0
    wait "${PID[$id]}" || RC=$?
    unset "PID[$id]"
}

# wait_line FILE REGEX SECS [PID]: wait until a line of FILE matches the
# extended REGEX; 1 after SECS seconds without one (wall clock: a loop
# count would stretch under a slow emulated CPU), or at once when process
# PID (the member writing FILE) has exited without printing it.
wait_line() {
    local file=$1 re=$2 pid=${4:-} end=$((SECONDS + $3))
    until grep -Eq "$re" "$file" 2>/dev/null; do
        if [ "$SECONDS" -ge "$end" ]; then return 1; fi
        if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
            grep -Eq "$re" "$file" 2>/dev/null
            return
        fi
        sleep 0.1
    done
}
