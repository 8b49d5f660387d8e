#!/bin/sh
# Demo of alktunnel: a relay, a TCP and a UDP echo target, a gateway and a
# client, all on 127.0.0.1 with ports picked by the kernel. The client
# reaches the gateway through the relay (--via-relay), forwards a TCP port
# (-L) and a UDP port (-U) to the echo servers. TCP: 4 MiB of random bytes
# go through while the echo is read back concurrently, and both SHA-256
# digests must match. UDP: 2000 datagrams of 0..1400 bytes (25 empty) go
# through, at most 32 outstanding, missing ones sent again by sequence
# number; each must come back with its exact content, the empty ones
# empty. Then SIGTERM: the client must end cleanly (exit 0) within its 3 s
# grace, its UDP flows logged with their counts. Bounded in time (< 25 s):
# every wait is a loop with a limit and the transfers run under `timeout`
# with what is left of an 18 s budget (then at most 4 s for the stop).
set -eu
started=$(date +%s)
# left MAX: seconds of the budget left, at most MAX (and at least 1)
left() {
    l=$((started + 18 - $(date +%s)))
    [ "$l" -le "$1" ] || l=$1
    [ "$l" -ge 1 ] || l=1
    echo "$l"
}
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
    for f in relay echo udpecho gateway client; do
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
# the key gw1 proves its offers with at the relay (the relay takes offers
# only from gateways it holds a key for)
offer_key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')

"$bin" relay --listen 127.0.0.1:0 --token "$token" --offer-key "gw1:$offer_key" \
    --port-file "$tmp/relay.port" 2> "$tmp/relay.log" &
pids="$pids $!"
"$bin" echo --listen 127.0.0.1:0 --port-file "$tmp/echo.port" 2> "$tmp/echo.log" &
pids="$pids $!"
"$bin" echo --listen 127.0.0.1:0 --udp --port-file "$tmp/udpecho.port" \
    2> "$tmp/udpecho.log" &
pids="$pids $!"
relay_port=$(wait_port "$tmp/relay.port")
echo_port=$(wait_port "$tmp/echo.port")
udp_echo_port=$(wait_port "$tmp/udpecho.port")

# One control document for both sides, but for the relay item's offer_key:
# the gateway's alone (a client never holds it). The gateway keeps its own
# resources, the client picks the gateway by the resource's "gateway".
view() {   # view FILE [OFFER_KEY]
    key=${2:+',"offer_key":"'$2'"'}
    cat > "$1" <<EOF
{"resources":[{"id":"echo-host","cidr":"127.0.0.1/32",
               "ports":[{"from":1,"to":65535}],"protocols":["tcp","udp"],
               "gateway":"gw1"}],
 "authorizations":[{"client":"laptop","resource":"echo-host",
                    "secret":"$secret","expires":4102444800}],
 "relays":[{"id":"r1","address":"127.0.0.1","port":$relay_port,
            "token":"$token"$key}]}
EOF
}
view "$tmp/gateway.json" "$offer_key"
view "$tmp/client.json"

"$bin" gateway --id gw1 --config "$tmp/gateway.json" --listen 127.0.0.1:0 \
    --port-file "$tmp/gateway.port" 2> "$tmp/gateway.log" &
pids="$pids $!"
gateway_port=$(wait_port "$tmp/gateway.port")
"$bin" client --id laptop --config "$tmp/client.json" --via-relay \
    --gateway "gw1=127.0.0.1:$gateway_port" -L "0:127.0.0.1:$echo_port" \
    -U "0:127.0.0.1:$udp_echo_port" --port-file "$tmp/client.port" \
    --udp-port-file "$tmp/client.udp-port" 2> "$tmp/client.log" &
client=$!
pids="$pids $client"
local_port=$(wait_port "$tmp/client.port")
local_udp_port=$(wait_port "$tmp/client.udp-port")

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
timeout "$(left 14)" python3 "$tmp/move.py" "$local_port" > "$tmp/move.out" 2>&1 ||
    { cat "$tmp/move.out"; fail "the transfer"; }
cat "$tmp/move.out"
grep -q "spliced" "$tmp/relay.log" || fail "the relay did not splice: not the relay path"

# UDP: long datagrams carry their sequence number and go 32 at a time on
# one socket (one flow); the short ones (0..3 bytes: no room for a number,
# a quarter of them empty) go one at a time on a second socket (a second
# flow), so each reply is known by its content. Loopback UDP may drop
# under load: what does not come back within 250 ms is sent again.
cat > "$tmp/udp.py" <<'EOF'
import os, select, socket, sys, time
begun = time.time()             # (the budget counts from here: start-up too)
port, budget = int(sys.argv[1]), float(sys.argv[2])
total, shorts, window, rto = 2000, 100, 32, 0.25
longs = total - shorts
data = [seq.to_bytes(4, "big") + os.urandom((seq * 7919) % 1397)
        for seq in range(longs)]                  # 4..1400 bytes
data[1] = data[1][:4] + os.urandom(1396)          # the largest one for sure
short = [bytes((i * 37 + k) & 0xFF for k in range(i % 4)) for i in range(shorts)]
def sock():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    return s
def send(s, d):
    try:
        s.send(d)
    except (BlockingIOError, ConnectionRefusedError):
        pass                    # lost: sent again after rto
a, b = sock(), sock()
t0 = time.time()
deadline = begun + budget - 0.5
out, back = {}, set()           # long: seq -> when last sent; seqs back
next_seq = resent = 0
si, s_sent, s_back, empties = 0, None, 0, 0
def die(msg):
    sys.exit("UDP: %s (%d of %d long, %d of %d short back, %d resent)"
             % (msg, len(back), longs, s_back, shorts, resent))
while len(back) < longs or s_back < shorts:
    now = time.time()
    if now > deadline:
        die("out of time")
    while len(out) < window and next_seq < longs:
        send(a, data[next_seq])
        out[next_seq] = now
        next_seq += 1
    for seq, t in list(out.items()):
        if now - t > rto:
            send(a, data[seq])
            out[seq] = now
            resent += 1
    if si < shorts and (s_sent is None or now - s_sent > rto):
        resent += s_sent is not None
        send(b, short[si])
        s_sent = now
    ready = select.select([a, b], [], [], 0.02)[0]
    for s in ready:
        while True:
            try:
                d = s.recv(65536)
            except (BlockingIOError, ConnectionRefusedError):
                break
            if s is a:
                seq = int.from_bytes(d[:4], "big") if len(d) >= 4 else -1
                if seq < 0 or seq >= longs or d != data[seq]:
                    die("a datagram came back changed (%d bytes)" % len(d))
                out.pop(seq, None)
                back.add(seq)
            elif si < shorts and d == short[si]:
                s_back += 1
                empties += len(d) == 0
                si += 1
                s_sent = None
            elif d not in short[:si]:         # (not a late duplicate)
                die("a short datagram came back changed: %r for %r"
                    % (d, short[si] if si < shorts else None))
dt = time.time() - t0
if empties != shorts // 4:
    die("%d empty datagrams came back empty, not %d" % (empties, shorts // 4))
print("%d datagrams of 0..1400 bytes (%d empty) back intact, %d resent, "
      "%.0f datagrams/s" % (total, empties, resent, total / dt))
EOF
udp_time=$(left 8)
timeout "$((udp_time + 1))" python3 "$tmp/udp.py" "$local_udp_port" "$udp_time" \
    > "$tmp/udp.out" 2>&1 || { cat "$tmp/udp.out"; fail "the UDP datagrams"; }
cat "$tmp/udp.out"

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
grep -q "closed: done; [0-9]* datagrams ([0-9]* bytes) local->tunnel" "$tmp/client.log" ||
    fail "no UDP flow closed with its counts in the client's log"
logs
rate=$(sed -n 's/.*, \([0-9.]*\) MB\/s$/\1/p' "$tmp/move.out")
udp_rate=$(sed -n 's/.*, \([0-9]*\) datagrams\/s$/\1/p' "$tmp/udp.out")
echo "alktunnel demo: TCP: 4 MiB through client -> relay -> gateway -> echo and back" \
    "intact, $rate MB/s; UDP: 2000 datagrams of 0..1400 bytes (25 empty) through -U" \
    "and back intact, $udp_rate datagrams/s: ok"
