# proc.sh - process helpers for the scripts that start whole processes
# (tunnel_process.sh, bench_tunnel.sh); sourced after they set $tmp and
# pids (which their cleanup kills).

wait_file() {   # wait_file FILE: up to 5 s for a non-empty file
    i=0
    while [ ! -s "$1" ]; do
        i=$((i + 1)); [ $i -lt 100 ] || return 1
        sleep 0.05
    done
}

bg() {   # bg NAME CMD...: background, stdout to $tmp/NAME.out, stderr to $tmp/NAME.log
    bg_name=$1; shift
    "$@" > "$tmp/$bg_name.out" 2> "$tmp/$bg_name.log" &
    eval "pid_$bg_name=$!"
    pids="$pids $!"
}
