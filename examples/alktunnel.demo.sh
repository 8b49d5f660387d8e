#!/bin/sh
# Demo of alktunnel: a relay, an echo target, a gateway and a client, all on
# 127.0.0.1 with ports picked by the kernel. The client reaches the gateway
# through the relay (--via-relay) and forwards a local port to the echo
# server; 4 MiB of random bytes go through it while the echo is read back
# concurrently, and both SHA-256 digests must match. Then SIGTERM: the
# client must end cleanly (exit 0) within its 3 s grace. Bounded in time:
# every wait is a loop with a limit and the transfer runs under `timeout`.
set -eu
B=${B:-build}
bin="$B/alktunnel"
tmp=$(mktemp -d)
pids=
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

logs() {
    for f in relay echo gateway client; do
        [ -s "$tmp/$f.log" ] && { echo "--- $f.log"; cat "$tmp/$f.log"; }
    done
    return 0
}
fail() {
    echo "alktunnel demo: FAILED: $*"
    logs
    exit 1
}
# wait_port FILE: the port a process wrote there (5 s at most)
wait_port() {
    i=0
    while [ ! -s "$1" ]; do
        i=$((i + 1)); [ $i -lt 100 ] || fail "no port in $(basename "$1")"
        sleep 0.05
    done
    cat "$1"
}

token=demo-relay-token
secret=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')

"$bin" relay --listen 127.0.0.1:0 --token "$token" --port-file "$tmp/relay.port" \
    2> "$tmp/relay.log" &
pids="$pids $!"
"$bin" echo --listen 127.0.0.1:0 --port-file "$tmp/echo.port" 2> "$tmp/echo.log" &
pids="$pids $!"
relay_port=$(wait_port "$tmp/relay.port")
echo_port=$(wait_port "$tmp/echo.port")

# One control document serves both sides: the gateway keeps its own
# resources, the client picks the gateway by the resource's "gateway".
cat > "$tmp/gateway.json" <<EOF
{"resources":[{"id":"echo-host","cidr":"127.0.0.1/32",
               "ports":[{"from":1,"to":65535}],"protocols":["tcp"],
               "gateway":"gw1"}],
 "authorizations":[{"client":"laptop","resource":"echo-host",
                    "secret":"$secret","expires":4102444800}],
 "relays":[{"id":"r1","address":"127.0.0.1","port":$relay_port,
            "token":"$token"}]}
EOF
cp "$tmp/gateway.json" "$tmp/client.json"

"$bin" gateway --id gw1 --config "$tmp/gateway.json" --listen 127.0.0.1:0 \
    --port-file "$tmp/gateway.port" 2> "$tmp/gateway.log" &
pids="$pids $!"
gateway_port=$(wait_port "$tmp/gateway.port")
"$bin" client --id laptop --config "$tmp/client.json" --via-relay \
    --gateway "gw1=127.0.0.1:$gateway_port" -L "0:127.0.0.1:$echo_port" \
    --port-file "$tmp/client.port" 2> "$tmp/client.log" &
client=$!
pids="$pids $client"
local_port=$(wait_port "$tmp/client.port")

cat > "$tmp/move.py" <<'EOF'
import hashlib, os, socket, sys, threading, time
port, size = int(sys.argv[1]), 4 << 20
data = os.urandom(size)
s = socket.create_connection(("127.0.0.1", port), timeout=10)
got, err = [], []
def reader():
    try:
        while True:
            b = s.recv(1 << 16)
            if not b:
                return
            got.append(b)
    except Exception as e:
        err.append(e)
t = threading.Thread(target=reader)
t0 = time.time()
t.start()
s.sendall(data)
s.shutdown(socket.SHUT_WR)
t.join(12)
dt = time.time() - t0
back = b"".join(got)
if t.is_alive() or err:
    sys.exit("no end of the echo: %d of %d bytes back (%s)" % (len(back), size, err))
a, b = hashlib.sha256(data).hexdigest(), hashlib.sha256(back).hexdigest()
if a != b:
    sys.exit("MISMATCH: sent %d bytes sha256 %s, got %d bytes sha256 %s"
             % (size, a, len(back), b))
print("%d bytes each way, sha256 %s..., %.1f MB/s" % (size, a[:16], size / dt / 1e6))
EOF
timeout 14 python3 "$tmp/move.py" "$local_port" > "$tmp/move.out" 2>&1 ||
    { cat "$tmp/move.out"; fail "the transfer"; }
cat "$tmp/move.out"
grep -q "spliced" "$tmp/relay.log" || fail "the relay did not splice: not the relay path"

# SIGTERM: the client ends its channels with EOF and exits 0 within 3 s.
kill -TERM "$client"
i=0
while kill -0 "$client" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 80 ] || fail "the client did not stop within 4 s"
    sleep 0.05
done
rc=0
wait "$client" || rc=$?
[ "$rc" -eq 0 ] || fail "the client exited $rc after SIGTERM"
logs
rate=$(sed -n 's/.*, \([0-9.]*\) MB\/s$/\1/p' "$tmp/move.out")
echo "alktunnel demo: 4 MiB through client -> relay -> gateway -> echo and back intact, $rate MB/s: ok"
