#!/bin/sh
# tunnel_process.sh - the alktunnel tool as real processes on 127.0.0.1
# (a `make test` stage): relay, gateway, client and an echo target.
#
#   1. 16 MiB go through client -> relay -> gateway -> echo and back while
#      the relay is killed (SIGKILL) a quarter of the way in: the client
#      must resume over the direct path and the echo must match (sha256).
#   2. With a channel open, the gateway's config loses the authorization
#      (SIGHUP): the live channel is closed with the revocation code and a
#      new connection through the tunnel is refused.
#   3. A --plaintext client against the (encrypted) gateway: its opens get
#      nothing through, and a log says one side is plaintext.
#
# Loopback only, every wait bounded; prints "tunnel-process: P passed, F
# failed". Needs python3 (the traffic generator).
set -u
B=${B:-build}
bin="$B/alktunnel"
tmp=$(mktemp -d)
pids=""
pass=0
fail=0
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAILED: $*"; }
finish() {
    echo "tunnel-process: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit $?
}

wait_file() {   # wait_file FILE: up to 5 s for a non-empty file
    i=0
    while [ ! -s "$1" ]; do
        i=$((i + 1)); [ $i -lt 100 ] || return 1
        sleep 0.05
    done
}

if ! command -v python3 >/dev/null 2>&1; then
    echo "!!! SKIPPED tunnel-process: python3 is not installed"
    finish
fi

start() {   # start NAME ARGS...: background, log to $tmp/NAME.log
    name=$1; shift
    "$bin" "$@" 2> "$tmp/$name.log" &
    eval "pid_$name=$!"
    pids="$pids $!"
}

# the view: one resource (the echo), one authorization, one relay
write_view() {   # write_view FILE RELAYPORT WITH_AUTH
    if [ "$3" = 1 ]; then
        auth='{"client":"laptop","resource":"echo","secret":"'"$secret"'","expires":4102444800}'
    else
        auth=''
    fi
    cat > "$1" <<EOF
{"resources":[{"id":"echo","cidr":"127.0.0.1/32","protocols":["tcp"],"gateway":"gw1"}],
 "authorizations":[$auth],
 "relays":[{"id":"r1","address":"127.0.0.1","port":$2,"token":"process-test-token"}]}
EOF
}
secret=6f6e652073656372657420666f72207468652070726f63657373207465737421

start relay relay --listen 127.0.0.1:0 --token process-test-token \
    --port-file "$tmp/relay.port"
start echo echo --listen 127.0.0.1:0 --port-file "$tmp/echo.port"
wait_file "$tmp/relay.port" && wait_file "$tmp/echo.port" || {
    bad "relay or echo did not start"; finish; }
rport=$(cat "$tmp/relay.port")
eport=$(cat "$tmp/echo.port")
write_view "$tmp/gateway.json" "$rport" 1
write_view "$tmp/client.json" "$rport" 1
start gateway gateway --id gw1 --config "$tmp/gateway.json" \
    --listen 127.0.0.1:0 --port-file "$tmp/gw.port"
wait_file "$tmp/gw.port" || { bad "gateway did not start"; finish; }
gport=$(cat "$tmp/gw.port")
start client client --id laptop --config "$tmp/client.json" --via-relay \
    --gateway "gw1=127.0.0.1:$gport" -L "0:127.0.0.1:$eport" \
    --port-file "$tmp/cl.port"
wait_file "$tmp/cl.port" || { bad "client did not start"; finish; }
lport=$(cat "$tmp/cl.port")

# 1. 16 MiB with the relay killed on the way
cat > "$tmp/xfer.py" <<'EOF'
import hashlib, os, socket, sys, threading, time
port, total, kill_at, killfile = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
data = os.urandom(total)
s = socket.create_connection(("127.0.0.1", port), timeout=30)
got = bytearray()
def reader():
    while True:
        b = s.recv(1 << 16)
        if not b:
            return
        got.extend(b)
        if kill_at and len(got) >= kill_at and not os.path.exists(killfile):
            open(killfile, "w").write("now")
t = threading.Thread(target=reader)
t.start()
off = 0
while off < total:
    off += s.send(data[off:off + (1 << 16)])
    if kill_at and os.path.exists(killfile) and not os.path.exists(killfile + ".done"):
        # wait until the relay is dead before going on
        deadline = time.time() + 5
        while not os.path.exists(killfile + ".done") and time.time() < deadline:
            time.sleep(0.01)
s.shutdown(socket.SHUT_WR)
t.join(60)
ok = hashlib.sha256(got).digest() == hashlib.sha256(data).digest()
print("echoed %d of %d bytes, sha256 %s" % (len(got), total, "equal" if ok else "DIFFERENT"))
sys.exit(0 if ok else 1)
EOF
# the killer: once the reader passed a quarter, SIGKILL the relay
( i=0
  while [ ! -f "$tmp/kill" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
  kill -9 "$pid_relay" 2>/dev/null
  touch "$tmp/kill.done" ) &
killer=$!
pids="$pids $killer"
if timeout 60 python3 "$tmp/xfer.py" "$lport" 16777216 4194304 "$tmp/kill"; then
    ok "16 MiB echoed intact"
else
    bad "16 MiB transfer"
fi
grep -q "spliced" "$tmp/relay.log" && ok "the transfer started through the relay" ||
    bad "no splice at the relay"
[ -f "$tmp/kill.done" ] && ! kill -0 "$pid_relay" 2>/dev/null &&
    ok "the relay was killed mid-transfer" || bad "the relay was not killed"
grep -q "resumed" "$tmp/client.log" && ok "the client resumed its session" ||
    bad "no resumption in the client's log"

# 2. revocation: a live channel, then the authorization goes
cat > "$tmp/live.py" <<'EOF'
import socket, sys, time
port, flag = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port), timeout=20)
s.sendall(b"ping")
assert s.recv(4) == b"ping"
open(flag, "w").write("up")
try:
    while True:          # the tunnel must end this channel
        b = s.recv(100)
        if not b:
            break
except OSError:
    pass
print("live channel closed")
EOF
timeout 30 python3 "$tmp/live.py" "$lport" "$tmp/live.up" > "$tmp/live.out" 2>&1 &
live=$!
wait_file "$tmp/live.up" || bad "the live channel did not come up"
write_view "$tmp/gateway.json" "$rport" 0
kill -HUP "$pid_gateway"
if wait "$live" && grep -q "closed" "$tmp/live.out"; then
    ok "the live channel was closed after the revocation"
else
    bad "the live channel outlived the revocation"
fi
grep -q "revoked" "$tmp/gateway.log" "$tmp/client.log" &&
    ok "the close carries the revocation code" || bad "no revocation code in the logs"
cat > "$tmp/new.py" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
try:
    s.sendall(b"hello")
    b = s.recv(100)
except OSError:
    b = b""
print("refused" if not b else "OPEN: %r" % b)
sys.exit(0 if not b else 1)
EOF
if timeout 20 python3 "$tmp/new.py" "$lport"; then
    ok "a new open after the revocation is refused"
else
    bad "a new open went through after the revocation"
fi
grep -q "unauthorized\|UNAUTHORIZED\|not authorized" "$tmp/client.log" &&
    ok "the refusal says unauthorized" || bad "no refusal code in the client's log"
# 3. a plaintext client against the encrypted gateway: refused, and said why
write_view "$tmp/gateway.json" "$rport" 1
kill -HUP "$pid_gateway"
start plain client --id laptop --config "$tmp/client.json" --plaintext \
    --gateway "gw1=127.0.0.1:$gport" -L "0:127.0.0.1:$eport" \
    --port-file "$tmp/plain.port"
if wait_file "$tmp/plain.port"; then
    if timeout 20 python3 "$tmp/new.py" "$(cat "$tmp/plain.port")" > /dev/null; then
        ok "a plaintext client gets nothing through an encrypted gateway"
    else
        bad "a plaintext client's open went through an encrypted gateway"
    fi
    grep -q "one peer is encrypted, the other plaintext" "$tmp/plain.log" "$tmp/gateway.log" &&
        ok "the refusal says one side is plaintext" ||
        bad "no plaintext-mismatch reason in the logs"
else
    bad "the plaintext client did not start"
fi
if [ "$fail" -ne 0 ]; then
    for f in client gateway relay plain; do
        echo "--- $f.log (last 15 lines)"; tail -15 "$tmp/$f.log"
    done
fi
[ -n "${TUNNEL_PROCESS_VERBOSE:-}" ] && for f in client gateway relay; do echo "--- $f.log"; cat "$tmp/$f.log"; done
finish
