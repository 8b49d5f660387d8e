#!/bin/sh
# Demo of session_echo: 3 MiB through an authenticated session over real TCP
# on 127.0.0.1 and back, with the client dropping its connection twice
# mid-transfer; the session resumes each time and every byte comes back
# once, in order (cmp), however much was in flight at the drop.
set -eu
B=${B:-build}
bin="$B/session_echo"
tmp=$(mktemp -d)
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

head -c 3145728 /dev/urandom > "$tmp/in"
"$bin" serve "$tmp/port" 2> "$tmp/serve.err" &
server=$!
i=0
while [ ! -s "$tmp/port" ]; do
    i=$((i + 1)); [ $i -lt 100 ] || { echo "no port"; exit 1; }
    sleep 0.05
done
"$bin" send "$(cat "$tmp/port")" 1000000 2000000 < "$tmp/in" > "$tmp/out"
wait "$server"
server=
cat "$tmp/serve.err"
cmp "$tmp/in" "$tmp/out"
echo "session_echo demo: 3 MiB echoed intact across 2 resumptions: ok"
