#!/bin/sh
# bench_tunnel.sh - the alktunnel tool against socat (and ssh -L) as whole
# processes on 127.0.0.1, measured in the same run (a `make bench` stage).
#
#   1. Bulk: N MiB (BENCH_TUNNEL_MIB, default 256) one way from one python3
#      sender to one python3 sink that counts and discards, through
#        alktunnel  client -> gateway -> sink           (direct, encrypted)
#        alktunnel  client -> gateway -> sink           (direct, --plaintext)
#        alktunnel  client -> relay -> gateway -> sink  (--via-relay,
#                                                        --plaintext)
#        socat chains with the same number of forwarding processes
#        alktunnel  client -> relay -> gateway -> sink  (--via-relay,
#                                                        encrypted)
#        ssh -L (client + sshd) with chacha20-poly1305 and with
#        aes128-gcm, when ssh and sshd are installed
#      and with no forwarder at all (the ceiling of the sender and sink).
#      Timed from the sender's first byte to the sink's count reaching N,
#      both on CLOCK_MONOTONIC. Each case BENCH_TUNNEL_REPS (default 5)
#      times, interleaved; median and min-max. Targets, like with like:
#      plaintext alktunnel >= 1.0x socat with the same hops; encrypted
#      alktunnel >= 1.0x ssh -L chacha20-poly1305 (both encrypt every byte
#      with ChaCha20-Poly1305), and (issue 42) direct >= 1.0x ssh -L
#      aes128-gcm in MB/s with <= 1.0x its CPU per GB, via the relay >=
#      1.0x ssh -L chacha20-poly1305. CPU per GB: the user + system time
#      of each case's forwarding processes and their children (a socat
#      listener's forks, sshd's per-connection processes), read from
#      /proc before and after each run. On 2 cores the python3 sender and
#      sink take most of the CPU (two thirds, perf), so MB/s is shared
#      with them; CPU per GB is the tool's own cost.
#   2. Latency: 64-byte ping-pong against `alktunnel echo`, 1000 round
#      trips per path (5 interleaved rounds of 200), median round trip and
#      the latency each forwarding process adds.
#
# Loopback only, every wait bounded, every process started here is ended by
# its pid on exit. socat or ssh missing: their rows say SKIPPED. Exit 1
# when a target is missed or a case fails, after printing everything.
# ALKTUNNEL=path runs another build of the tool.
# Word splitting of $(...) into "set --" is meant; chain ports are set by eval.
# shellcheck disable=SC2046,SC2154
set -u
B=${B:-build}
bin=${ALKTUNNEL:-$B/alktunnel}
MIB=${BENCH_TUNNEL_MIB:-256}
REPS=${BENCH_TUNNEL_REPS:-5}
PING_ROUNDS=5
PING_PER_ROUND=200
tmp=$(mktemp -d)
pids=""
made_run_sshd=""
missed=0

stop_all() {   # TERM, up to 4 s (a gateway or client drains up to 3 s), KILL
    for p in $pids; do kill "$p" 2>/dev/null; done
    i=0
    while [ $i -lt 40 ]; do
        alive=""
        for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
        [ -z "$alive" ] && break
        sleep 0.1; i=$((i + 1))
    done
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    pids=""
}
cleanup() {
    stop_all
    [ -n "$made_run_sshd" ] && rmdir /run/sshd 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

load1() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?"; }

if ! command -v python3 >/dev/null 2>&1; then
    echo "alktunnel processes vs socat: SKIPPED (python3 not installed)"
    exit 0
fi
# the interpreter itself: a version manager's shim can cost a second a call
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
[ -x "$PY" ] || PY=python3
if [ ! -x "$bin" ]; then
    echo "bench-tunnel: $bin is not built (make $B/alktunnel)"
    exit 1
fi

# ---- the traffic: sender, sink, ping, and the small tools -----------------
py="$tmp/bench.py"
cat > "$py" <<'EOF'
import os, random, socket, struct, sys, threading, time

def free_ports(k):
    # below the ephemeral range (32768-), so an outgoing connect of another
    # test cannot take the port between this check and the listen
    got = []
    while len(got) < k:
        p = random.randint(20000, 32000)
        if p in got:
            continue
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
            got.append(p)
        except OSError:
            pass
        finally:
            s.close()
    print(" ".join(map(str, got)))

def listening(port):
    want = ":%04X" % port
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            for line in open(name).read().splitlines()[1:]:
                f = line.split()
                if f[1].endswith(want) and f[3] == "0A":
                    return True
        except OSError:
            pass
    return False

def wait_listen(port, secs):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        if listening(port):
            return 0
        time.sleep(0.02)
    return 1

HDR = struct.Struct(">8sQ")   # tag, payload bytes

def sink(port_file, results):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
    out = open(results, "a")
    lock = threading.Lock()
    def serve(c):
        buf = bytearray(1 << 20)
        mv = memoryview(buf)
        head = b""
        try:
            while len(head) < HDR.size:
                r = c.recv(HDR.size - len(head))
                if not r:
                    return
                head += r
            tag, total = HDR.unpack(head)
            count, reported = 0, False
            while True:
                r = c.recv_into(mv)
                if r == 0:
                    break
                count += r
                if not reported and count >= total:
                    t = time.monotonic_ns()
                    with lock:
                        out.write("%s %d %d\n" % (tag.decode(), t, count))
                        out.flush()
                    reported = True
        except OSError:
            pass
        finally:
            c.close()
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    os.rename(port_file + ".tmp", port_file)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()

def send(port, nbytes, results, tag):
    chunk = os.urandom(4 << 20)   # not compressible, for ssh's sake
    mv = memoryview(chunk)
    tagb = tag.encode()[:8].ljust(8, b"-")
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    t0 = time.monotonic_ns()
    s.sendall(HDR.pack(tagb, nbytes))
    left = nbytes
    while left:
        k = min(left, len(chunk))
        s.sendall(mv[:k])
        left -= k
    s.shutdown(socket.SHUT_WR)
    deadline = time.monotonic() + 60
    key = tagb.decode() + " "
    while time.monotonic() < deadline:
        for line in open(results).read().splitlines():
            if line.startswith(key):
                t1 = int(line.split()[1])
                s.close()
                print("%.1f" % (nbytes / ((t1 - t0) / 1e9) / 1e6))
                return 0
        time.sleep(0.002)
    print("the sink never counted %d bytes of %s" % (nbytes, tag), file=sys.stderr)
    return 1

def ping(port, count, samples):
    msg = b"p" * 64
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    def once():
        t = time.perf_counter_ns()
        s.sendall(msg)
        got = 0
        while got < 64:
            r = s.recv(64 - got)
            if not r:
                raise OSError("the echo closed")
            got += len(r)
        return (time.perf_counter_ns() - t) / 1e3
    for _ in range(20):   # the channel opens, caches warm
        once()
    v = [once() for _ in range(count)]
    s.close()
    with open(samples, "a") as f:
        f.write("".join("%.2f\n" % x for x in v))
    return 0

def stats(name):
    v = sorted(float(x) for x in open(name).read().split())
    if not v:
        return 1
    print("%.1f %.1f %.1f %d" % (v[len(v) // 2], v[0], v[-1], len(v)))
    return 0

def cpu(pids):
    # CPU ticks (user + system, and of reaped children) of each process and
    # all its live descendants: a socat listener's forked children, sshd's
    # per-connection processes
    kids, ticks = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            st = open("/proc/%s/stat" % d).read()
        except OSError:
            continue
        f = st[st.rindex(")") + 2:].split()
        ticks[int(d)] = sum(int(x) for x in f[11:15])
        kids.setdefault(int(f[1]), []).append(int(d))
    total, seen, stack = 0, set(), [int(p) for p in pids]
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        total += ticks.get(p, 0)
        stack += kids.get(p, [])
    print(total)
    return 0

cmd, a = sys.argv[1], sys.argv[2:]
if cmd == "cpu":
    sys.exit(cpu(a))
if cmd == "ports":
    free_ports(int(a[0])); sys.exit(0)
if cmd == "listen":
    sys.exit(wait_listen(int(a[0]), float(a[1])))
if cmd == "sink":
    sink(a[0], a[1])
if cmd == "send":
    sys.exit(send(int(a[0]), int(a[1]), a[2], a[3]))
if cmd == "ping":
    sys.exit(ping(int(a[0]), int(a[1]), a[2]))
if cmd == "stats":
    sys.exit(stats(a[0]))
sys.exit(2)
EOF

. "$(dirname "$0")/proc.sh"   # wait_file, bg
wait_listen() { timeout 10 "$PY" "$py" listen "$1" 5; }

load_before=$(load1)
ticks=$(getconf CLK_TCK 2>/dev/null || echo 100)
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo "?")

# ---- the ends: sink and echo ------------------------------------------------
results="$tmp/sink.results"
: > "$results"
bg sink "$PY" "$py" sink "$tmp/sink.port" "$results"
bg echo "$bin" echo --listen 127.0.0.1:0 --port-file "$tmp/echo.port"
wait_file "$tmp/sink.port" && wait_file "$tmp/echo.port" || {
    echo "bench-tunnel: the sink or the echo did not start"; exit 1; }
sink=$(cat "$tmp/sink.port")
echo_port=$(cat "$tmp/echo.port")

# ---- alktunnel: (a) client -> gateway, (b) client -> relay -> gateway -----
secret=62656e63682d74756e6e656c2d7365637265742d6e6f742d666f722d75736521
# the key gw1 proves its offers with at the relay: in the gateway's view
# and the relay's --offer-key, never in a client's view
offer_key=62656e6368206777312070726f766573206f66666572732061742072656c6179
view() {   # view FILE CLIENT [RELAYPORT [OFFER_KEY]]
    if [ $# -ge 3 ]; then
        relays='{"id":"r1","address":"127.0.0.1","port":'$3',"token":"bench-token"'${4:+',"offer_key":"'$4'"'}'}'
    else
        relays=''
    fi
    cat > "$1" <<EOF
{"resources":[{"id":"local","cidr":"127.0.0.1/32","protocols":["tcp"],"gateway":"gw1"}],
 "authorizations":[{"client":"$2","resource":"local","secret":"$secret","expires":4102444800}],
 "relays":[$relays]}
EOF
}
bg relay "$bin" relay --listen 127.0.0.1:0 --token bench-token --offer-key "gw1:$offer_key" \
    --port-file "$tmp/relay.port"
wait_file "$tmp/relay.port" || { echo "bench-tunnel: the relay did not start"; exit 1; }
relay_port=$(cat "$tmp/relay.port")
view "$tmp/gw_a.json" laptop
view "$tmp/gw_p.json" laptop
view "$tmp/gw_b.json" laptop "$relay_port" "$offer_key"
view "$tmp/cl_b.json" laptop "$relay_port"
view "$tmp/gw_c.json" laptop "$relay_port" "$offer_key"
view "$tmp/cl_c.json" laptop "$relay_port"
bg gw_a "$bin" gateway --id gw1 --config "$tmp/gw_a.json" --listen 127.0.0.1:0 \
    --port-file "$tmp/gw_a.port"
bg gw_p "$bin" gateway --id gw1 --config "$tmp/gw_p.json" --listen 127.0.0.1:0 \
    --port-file "$tmp/gw_p.port" --plaintext
bg gw_b "$bin" gateway --id gw1 --config "$tmp/gw_b.json" --listen 127.0.0.1:0 \
    --port-file "$tmp/gw_b.port" --plaintext
bg gw_c "$bin" gateway --id gw1 --config "$tmp/gw_c.json" --listen 127.0.0.1:0 \
    --port-file "$tmp/gw_c.port"
wait_file "$tmp/gw_a.port" && wait_file "$tmp/gw_p.port" &&
    wait_file "$tmp/gw_b.port" && wait_file "$tmp/gw_c.port" ||
    { echo "bench-tunnel: a gateway did not start"; exit 1; }
set -- $(timeout 10 "$PY" "$py" ports 4)
alkt_a_echo=$1 alkt_b_echo=$2 alkt_p_echo=$3 alkt_c_echo=$4
bg cl_a "$bin" client --id laptop --config "$tmp/gw_a.json" \
    --gateway "gw1=127.0.0.1:$(cat "$tmp/gw_a.port")" \
    -L "0:127.0.0.1:$sink" -L "$alkt_a_echo:127.0.0.1:$echo_port" --port-file "$tmp/cl_a.port"
bg cl_p "$bin" client --id laptop --config "$tmp/gw_p.json" --plaintext \
    --gateway "gw1=127.0.0.1:$(cat "$tmp/gw_p.port")" \
    -L "0:127.0.0.1:$sink" -L "$alkt_p_echo:127.0.0.1:$echo_port" --port-file "$tmp/cl_p.port"
bg cl_b "$bin" client --id laptop --config "$tmp/cl_b.json" --via-relay --plaintext \
    --gateway "gw1=127.0.0.1:$(cat "$tmp/gw_b.port")" \
    -L "0:127.0.0.1:$sink" -L "$alkt_b_echo:127.0.0.1:$echo_port" --port-file "$tmp/cl_b.port"
bg cl_c "$bin" client --id laptop --config "$tmp/cl_c.json" --via-relay \
    --gateway "gw1=127.0.0.1:$(cat "$tmp/gw_c.port")" \
    -L "0:127.0.0.1:$sink" -L "$alkt_c_echo:127.0.0.1:$echo_port" --port-file "$tmp/cl_c.port"
wait_file "$tmp/cl_a.port" && wait_file "$tmp/cl_p.port" && wait_file "$tmp/cl_b.port" &&
    wait_file "$tmp/cl_c.port" || { echo "bench-tunnel: a client did not start"; exit 1; }
alkt_a=$(cat "$tmp/cl_a.port")
alkt_p=$(cat "$tmp/cl_p.port")
alkt_b=$(cat "$tmp/cl_b.port")
alkt_c=$(cat "$tmp/cl_c.port")
wait_listen "$alkt_a_echo" && wait_listen "$alkt_p_echo" && wait_listen "$alkt_b_echo" &&
    wait_listen "$alkt_c_echo" || {
    echo "bench-tunnel: a client's -L to the echo is not listening"; exit 1; }

# ---- socat chains of 2 and 3 processes, to the sink and to the echo -------
# `fork` keeps each listener for every run; the forwarding is done by one
# forked child per connection, so a chain still has 2 (3) working processes.
have_socat=0
if command -v socat >/dev/null 2>&1; then
    have_socat=1
    socat_chain() {   # socat_chain NAME HOPS TARGET: sets $NAME to its entry port
        set -- "$1" "$2" "$3" $(timeout 10 "$PY" "$py" ports "$2")
        name=$1 hops=$2 next=$3
        shift 3
        k=$hops
        while [ "$k" -ge 1 ]; do
            eval "p=\${$k}"
            bg "${name}_$k" socat -b 262144 "TCP-LISTEN:$p,bind=127.0.0.1,reuseaddr,fork" \
                "TCP:127.0.0.1:$next"
            wait_listen "$p" || return 1
            next=$p
            k=$((k - 1))
        done
        eval "$name=$next"
    }
    socat_chain socat_a 2 "$sink" && socat_chain socat_b 3 "$sink" &&
        socat_chain socat_a_echo 2 "$echo_port" && socat_chain socat_b_echo 3 "$echo_port" ||
        { echo "bench-tunnel: a socat chain did not start"; exit 1; }
fi

# ---- ssh -L: a private sshd on a high loopback port ---------------------------
have_ssh=0
ssh_why="ssh or sshd not installed"
sshd_bin=$(command -v sshd 2>/dev/null || { [ -x /usr/sbin/sshd ] && echo /usr/sbin/sshd; })
if command -v ssh >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1 &&
   [ -n "$sshd_bin" ]; then
    d="$tmp/ssh"
    mkdir -p "$d" && chmod 700 "$d"
    timeout 30 ssh-keygen -q -t ed25519 -N "" -f "$d/host_key" >/dev/null 2>&1
    timeout 30 ssh-keygen -q -t ed25519 -N "" -f "$d/user_key" >/dev/null 2>&1
    cp "$d/user_key.pub" "$d/authorized_keys"
    set -- $(timeout 10 "$PY" "$py" ports 5)
    sshd_port=$1 ssh_bulk=$2 ssh_echo=$3 gcm_bulk=$4 gcm_echo=$5
    cat > "$d/sshd_config" <<EOF
ListenAddress 127.0.0.1:$sshd_port
HostKey $d/host_key
AuthorizedKeysFile $d/authorized_keys
PidFile none
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowTcpForwarding yes
Ciphers chacha20-poly1305@openssh.com,aes128-gcm@openssh.com
LogLevel ERROR
EOF
    # privilege separation wants its empty directory; made (and removed)
    # here only when absent
    if [ "$(id -u)" = 0 ] && [ ! -d /run/sshd ]; then
        mkdir -p /run/sshd && chmod 755 /run/sshd && made_run_sshd=1
    fi
    bg sshd "$sshd_bin" -D -e -f "$d/sshd_config"
    if wait_listen "$sshd_port"; then
        # ssh_forward NAME CIPHER BULKPORT ECHOPORT: an ssh -L client
        ssh_forward() {
            bg "$1" ssh -N -F /dev/null -i "$d/user_key" -p "$sshd_port" \
                -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
                -o ExitOnForwardFailure=yes -o Compression=no -o LogLevel=ERROR \
                -o IdentitiesOnly=yes -c "$2" \
                -L "127.0.0.1:$3:127.0.0.1:$sink" -L "127.0.0.1:$4:127.0.0.1:$echo_port" \
                "$(id -un)@127.0.0.1"
        }
        ssh_forward ssh chacha20-poly1305@openssh.com "$ssh_bulk" "$ssh_echo"
        ssh_forward ssh_gcm aes128-gcm@openssh.com "$gcm_bulk" "$gcm_echo"
        if wait_listen "$ssh_bulk" && wait_listen "$ssh_echo" &&
           wait_listen "$gcm_bulk" && wait_listen "$gcm_echo"; then
            have_ssh=1
        else
            ssh_why="ssh -L did not come up: $(head -c 200 "$tmp/ssh.log" | tr '\n' ' ')"
        fi
    else
        ssh_why="the private sshd did not start: $(head -c 200 "$tmp/sshd.log" | tr '\n' ' ')"
    fi
fi

# ---- the cases -----------------------------------------------------------------
# name|label|forwarding processes|TCP connections|bulk port|echo port|the
# forwarding processes' pids (their CPU time is counted with their trees')
cases="none|no forwarder|0|1|$sink|$echo_port|
alkt_a|alktunnel client -> gateway (encrypted)|2|3|$alkt_a|$alkt_a_echo|$pid_cl_a $pid_gw_a
alkt_p|alktunnel client -> gateway (plaintext)|2|3|$alkt_p|$alkt_p_echo|$pid_cl_p $pid_gw_p
alkt_b|alktunnel client -> relay -> gateway (plain)|3|4|$alkt_b|$alkt_b_echo|$pid_cl_b $pid_relay $pid_gw_b
alkt_c|alktunnel client -> relay -> gateway (encr.)|3|4|$alkt_c|$alkt_c_echo|$pid_cl_c $pid_relay $pid_gw_c"
[ $have_socat = 1 ] && cases="$cases
socat_a|socat -> socat|2|3|$socat_a|$socat_a_echo|$pid_socat_a_1 $pid_socat_a_2
socat_b|socat -> socat -> socat|3|4|$socat_b|$socat_b_echo|$pid_socat_b_1 $pid_socat_b_2 $pid_socat_b_3"
[ $have_ssh = 1 ] && cases="$cases
ssh|ssh -L -> sshd (chacha20-poly1305)|2|3|$ssh_bulk|$ssh_echo|$pid_ssh $pid_sshd
ssh_gcm|ssh -L -> sshd (aes128-gcm)|2|3|$gcm_bulk|$gcm_echo|$pid_ssh_gcm $pid_sshd"

for_cases() {   # for_cases FUNCTION: FUNCTION NAME LABEL PROCS CONNS BULK ECHO PIDS
    echo "$cases" | while IFS='|' read -r c_name c_label c_procs c_conns c_bulk c_echo c_pids; do
        "$1" "$c_name" "$c_label" "$c_procs" "$c_conns" "$c_bulk" "$c_echo" "$c_pids"
    done
}

failed="$tmp/failed"
: > "$failed"
echo 0 > "$tmp/seq"
bulk_once() {   # bulk_once NAME ... BULKPORT; MIB from $xfer_mib
    seq=$(($(cat "$tmp/seq") + 1))
    echo "$seq" > "$tmp/seq"
    tag=$(printf 'run%05d' "$seq")
    c0=0
    [ -n "$7" ] && c0=$("$PY" "$py" cpu $7)
    if r=$(timeout 90 "$PY" "$py" send "$5" $((xfer_mib * 1048576)) "$results" "$tag" \
           2>> "$tmp/send.log"); then
        echo "$r" >> "$tmp/bulk.$1.$xfer_mib"
        # CPU seconds of the forwarding processes per GB moved
        [ -n "$7" ] && echo "$c0 $("$PY" "$py" cpu $7) $xfer_mib $ticks" |
            awk '{ printf "%.3f\n", ($2 - $1) / $4 / ($3 * 1048576 / 1e9) }' \
            >> "$tmp/cpu.$1.$xfer_mib"
    else
        echo "$1" >> "$failed"
    fi
}
ping_once() {   # ping_once NAME ... ECHOPORT; appends samples, one round median
    timeout 60 "$PY" "$py" ping "$6" "$ping_count" "$tmp/ping.$1.round" \
        2>> "$tmp/ping.log" || { echo "$1" >> "$failed"; return; }
    "$PY" "$py" stats "$tmp/ping.$1.round" | cut -d' ' -f1 >> "$tmp/pingmed.$1"
    cat "$tmp/ping.$1.round" >> "$tmp/ping.$1"
    rm -f "$tmp/ping.$1.round"
}

# warm up every path (sessions established, relay spliced, caches) and prove it
xfer_mib=8
for_cases bulk_once
ping_count=50
for_cases ping_once
rm -f "$tmp"/bulk.* "$tmp"/cpu.* "$tmp"/ping.* "$tmp"/pingmed.*
if [ -s "$failed" ]; then
    echo "bench-tunnel: the warm-up failed through: $(sort -u "$failed" | tr '\n' ' ')"
    for f in cl_a gw_a cl_p gw_p cl_b gw_b relay send ping; do
        [ -s "$tmp/$f.log" ] && { echo "--- $f.log (last 10 lines)"; tail -10 "$tmp/$f.log"; }
    done
    exit 1
fi

t_start=$(date +%s)
xfer_mib=$MIB
rep=1
while [ $rep -le "$REPS" ]; do
    for_cases bulk_once
    rep=$((rep + 1))
done
ping_count=$PING_PER_ROUND
rep=1
while [ $rep -le $PING_ROUNDS ]; do
    for_cases ping_once
    rep=$((rep + 1))
done
t_end=$(date +%s)
load_after=$(load1)
# the relay case must have gone through the relay all along: one splice,
# and the client never resumed (over the direct path) on the way
splices=$(grep -c "spliced" "$tmp/relay.log")
resumes=$(cat "$tmp/cl_b.log" "$tmp/cl_c.log" | grep -c "resumed")
if [ "$splices" -ge 2 ] && [ "$resumes" -eq 0 ]; then
    relay_path="spliced at the relay, no resume"
else
    relay_path="FAILED: $splices splice(s) at the relay, $resumes resume(s) at the client"
    missed=1
fi

# ---- the report ------------------------------------------------------------------
echo "alktunnel processes vs socat and ssh -L on 127.0.0.1 ($cores cores)"
echo "load average (1 min): $load_before before, $load_after after" \
     "($(awk -v a="$load_before" -v b="$load_after" -v c="$cores" \
        'BEGIN { print (a + 0 < 0.5 * c && b + 0 < 0.5 * c + 1) ? "about idle" : "BUSY: the figures are noisy" }'))"
echo "tool: $bin; relay path: $relay_path; measured in $((t_end - t_start)) s"
echo "Every path has the same python3 sender and sink; 'procs' counts the"
echo "forwarding processes between them, 'conns' the TCP connections. An"
echo "alktunnel client and gateway are 2 processes joined by 1 connection, as"
echo "are 2 chained socat (socat -b 262144 TCP-LISTEN:P,fork TCP:next) and as"
echo "are ssh -L and its sshd; the relay path adds a third process and connection."
echo "alktunnel (unless plain) encrypts with ChaCha20-Poly1305, ssh with the cipher named."
echo "CPU s/GB: user + system seconds of the forwarding processes (and their"
echo "children) per 10^9 bytes moved, median of the runs."
echo
echo "1. bulk: $MIB MiB one way, sender's first byte to the sink's count; MB/s = 10^6 B/s,"
echo "   median (min-max) of $REPS, interleaved"
printf '   %-40s %5s %5s %10s %19s %9s\n' "path" "procs" "conns" "median" "min-max" "CPU s/GB"
bulk_row() {
    f="$tmp/bulk.$1.$MIB"
    if [ -s "$f" ]; then
        cpu=$(median_of "$tmp/cpu.$1.$MIB")
        set -- "$1" "$2" "$3" "$4" "$5" "$6" $("$PY" "$py" stats "$f")
        printf '   %-40s %5s %5s %10s %19s %9s\n' "$2" "$3" "$4" "$7" "($8-$9)" "${cpu:--}"
    else
        printf '   %-40s %5s %5s %10s\n' "$2" "$3" "$4" "FAILED"
    fi
}
median_of() { [ -s "$1" ] && "$PY" "$py" stats "$1" | cut -d' ' -f1; }
for_cases bulk_row
[ $have_socat = 1 ] || printf '   %-40s SKIPPED (socat not installed)\n' "socat chains"
[ $have_ssh = 1 ] || printf '   %-40s SKIPPED (%s)\n' "ssh -L -> sshd" "$ssh_why"

ratio_line() {   # ratio_line WHAT ALKT REF
    a=$(median_of "$tmp/bulk.$2.$MIB") r=$(median_of "$tmp/bulk.$3.$MIB")
    if [ -z "$a" ]; then
        echo "   target: $1 >= 1.00x socat: FAILED (no alktunnel figure)"
        missed=1
        return
    fi
    if [ -z "$r" ]; then
        echo "   target: $1 >= 1.00x socat: SKIPPED (socat not installed)"
        return
    fi
    verdict=$(awk -v a="$a" -v r="$r" 'BEGIN { x = a / r; printf "%.2fx %s", x, (x >= 1.0 ? "met" : "MISSED") }')
    echo "   target: $1 >= 1.00x socat with the same hops: $verdict"
    case $verdict in *MISSED) missed=1 ;; esac
}
echo
ratio_line "alktunnel direct, plaintext (2 procs)" alkt_p socat_a
ratio_line "alktunnel via relay, plaintext (3 procs)" alkt_b socat_b
if [ $have_ssh = 1 ] && [ -s "$tmp/bulk.ssh.$MIB" ]; then
    a=$(median_of "$tmp/bulk.alkt_a.$MIB") s=$(median_of "$tmp/bulk.ssh.$MIB")
    if [ -n "$a" ]; then
        verdict=$(awk -v a="$a" -v s="$s" 'BEGIN { x = a / s; printf "%.2fx %s", x, (x >= 1.0 ? "met" : "MISSED") }')
        echo "   target: alktunnel direct, encrypted >= 1.00x ssh -L (chacha20-poly1305): $verdict"
        case $verdict in *MISSED) missed=1 ;; esac
        vs_ssh() {   # vs_ssh WHAT ALKT SSH: MB/s >= 1.0x, and CPU s/GB <= 1.0x
            a=$(median_of "$tmp/bulk.$2.$MIB") g=$(median_of "$tmp/bulk.$3.$MIB")
            ac=$(median_of "$tmp/cpu.$2.$MIB") gc=$(median_of "$tmp/cpu.$3.$MIB")
            if [ -z "$a" ] || [ -z "$g" ]; then
                echo "   target: $1: FAILED (no figure)"; missed=1; return
            fi
            v=$(awk -v a="$a" -v g="$g" 'BEGIN { x = a / g; printf "%.2fx %s", x, (x >= 1.0 ? "met" : "MISSED") }')
            echo "   target: $1 MB/s >= 1.00x: $v"
            case $v in *MISSED) missed=1 ;; esac
            [ -n "$ac" ] && [ -n "$gc" ] || return 0
            v=$(awk -v a="$ac" -v g="$gc" 'BEGIN { x = a / g; printf "%.2fx %s", x, (x <= 1.0 ? "met" : "MISSED") }')
            echo "   target: $1 CPU s/GB <= 1.00x: $v"
            case $v in *MISSED) missed=1 ;; esac
        }
        vs_ssh "alktunnel direct, encrypted vs ssh -L aes128-gcm" alkt_a ssh_gcm
        vs_ssh "alktunnel via relay, encrypted vs ssh -L chacha20-poly1305" alkt_c ssh
    else
        echo "   target: alktunnel direct, encrypted >= 1.00x ssh -L: FAILED (no figure)"
        missed=1
    fi
    p=$(median_of "$tmp/bulk.alkt_p.$MIB")
    [ -n "$a" ] && [ -n "$p" ] && awk -v a="$a" -v p="$p" \
        'BEGIN { printf "   reference: alktunnel encrypted / plaintext: %.2fx\n", a / p }'
else
    echo "   target: alktunnel direct, encrypted >= 1.00x ssh -L: SKIPPED ($ssh_why)"
fi

echo
echo "2. latency: 64 B ping-pong against alktunnel echo, median round trip in us of"
echo "   $((PING_ROUNDS * PING_PER_ROUND)) ($PING_ROUNDS interleaved rounds of $PING_PER_ROUND; min-max of the round medians);"
echo "   added = median - no forwarder, per process = added / procs"
direct_us=$(median_of "$tmp/ping.none")
printf '   %-40s %5s %10s %17s %9s %12s\n' "path" "procs" "median" "rounds" "added" "per process"
ping_row() {
    f="$tmp/ping.$1"
    if [ ! -s "$f" ]; then
        printf '   %-40s %5s %10s\n' "$2" "$3" "FAILED"
        return
    fi
    m=$(median_of "$f")
    set -- "$1" "$2" "$3" "$4" "$5" "$6" $("$PY" "$py" stats "$tmp/pingmed.$1")
    if [ "$3" -gt 0 ] && [ -n "$direct_us" ]; then
        add=$(awk -v m="$m" -v d="$direct_us" 'BEGIN { printf "%.1f", m - d }')
        per=$(awk -v m="$m" -v d="$direct_us" -v p="$3" 'BEGIN { printf "%.1f", (m - d) / p }')
    else
        add="-" per="-"
    fi
    printf '   %-40s %5s %10s %17s %9s %12s\n' "$2" "$3" "$m" "($8-$9)" "$add" "$per"
}
for_cases ping_row
[ $have_socat = 1 ] || printf '   %-40s SKIPPED (socat not installed)\n' "socat chains"
[ $have_ssh = 1 ] || printf '   %-40s SKIPPED (%s)\n' "ssh -L -> sshd" "$ssh_why"

if [ -s "$failed" ]; then
    echo
    echo "FAILED runs through: $(sort -u "$failed" | tr '\n' ' ')"
    tail -5 "$tmp/send.log" "$tmp/ping.log" 2>/dev/null
    missed=1
fi
[ "$missed" -eq 0 ] || echo "bench-tunnel: target MISSED or a run failed"
exit "$missed"
