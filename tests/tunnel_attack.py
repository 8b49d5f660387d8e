#!/usr/bin/env python3
"""tunnel_attack.py - strangers and timed clients for tests/tunnel_process.sh.

  record --kind hello|offer --target PORT --port-file F --out F
      A forwarding proxy on 127.0.0.1 (port written to F) to 127.0.0.1:PORT
      that keeps the first connection's first frame: a client's HELLO (8-byte
      header, its 16-bit length at offset 2, that many bytes) or a gateway's
      relay offer ("ALKR", version, kind, token and id with their lengths,
      then freshness 8 and MAC 32). Every connection is forwarded both ways,
      so the recorded party works on through it.
  attack --port P --conns N --sample F --mode gateway|relay --stop-file F
         --report F [--source IP] [--max-secs S]
      N connections at once, each re-opened as soon as the far end closes
      it, until the stop file exists. gateway: in turn the recorded HELLO as
      it was (a replay), a HELLO-shaped frame of random bytes, the recorded
      one with random bytes changed, and plain random bytes; relay: the
      recorded offer as it was. The report counts connections and every
      byte that came back (a gateway must answer none; a relay one status
      byte each).
  steady --port P --stop-file F --report F
      An established channel (an -L port) echoing 64 bytes every 50 ms until
      the stop file exists: rounds, failures and the worst round trip.
  fresh --bin B --log F --secs S -- CLIENT ARGS...
      Starts `B client ARGS --port-file ...` and times it from the start to
      an echo through its -L; prints the seconds, exits 1 over S.

Every wait is bounded; loopback only.
"""
import os, random, signal, socket, subprocess, sys, threading, time


def opt(args, name, default=None):
    if name in args:
        return args[args.index(name) + 1]
    if default is None:
        sys.exit("tunnel_attack: %s needed" % name)
    return default


def write_atomic(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


# ---- record ---------------------------------------------------------------
def frame_len(kind, buf):
    """Bytes of the whole first frame once buf holds enough to tell, else 0."""
    if kind == "hello":
        return 8 + (buf[2] << 8 | buf[3]) if len(buf) >= 4 else 0
    if len(buf) < 7:
        return 0
    tl = buf[6]
    if len(buf) < 8 + tl:
        return 0
    return 8 + tl + buf[7 + tl] + (40 if buf[5] == 2 else 0)


def record(args):
    kind, target = opt(args, "--kind"), int(opt(args, "--target"))
    out = opt(args, "--out")
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
    write_atomic(opt(args, "--port-file"), "%d\n" % ls.getsockname()[1])
    state = {"first": True}

    def pipe(src, dst, keep):
        buf, done = b"", not keep
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                if not done:
                    buf += b
                    n = frame_len(kind, buf)
                    if n and len(buf) >= n:
                        with open(out + ".tmp", "wb") as f:
                            f.write(buf[:n])
                        os.rename(out + ".tmp", out)   # (a reader sees all or none)
                        done = True
                dst.sendall(b)
        except OSError:
            pass
        for s in (dst, src):
            try:
                s.shutdown(socket.SHUT_WR if s is dst else socket.SHUT_RD)
            except OSError:
                pass

    while True:
        c, _ = ls.accept()
        try:
            t = socket.create_connection(("127.0.0.1", target), timeout=5)
            t.settimeout(None)
        except OSError:
            c.close()
            continue
        keep, state["first"] = state["first"], False
        threading.Thread(target=pipe, args=(c, t, keep), daemon=True).start()
        threading.Thread(target=pipe, args=(t, c, False), daemon=True).start()


# ---- attack ---------------------------------------------------------------
def attack(args):
    port, conns = int(opt(args, "--port")), int(opt(args, "--conns"))
    sample = open(opt(args, "--sample"), "rb").read()
    mode, stop = opt(args, "--mode"), opt(args, "--stop-file")
    source = opt(args, "--source", "127.0.0.1")
    max_secs = float(opt(args, "--max-secs", "60"))
    deadline = time.monotonic() + max_secs
    lock = threading.Lock()
    tally = {"connections": 0, "answered": 0, "bytes_back": 0, "resets": 0, "errors": 0}
    statuses, errors = {}, {}

    def payload(k):
        if mode == "relay":
            return sample                                   # a replay
        kind = k % 4
        if kind == 0:
            return sample                                   # a replay
        if kind == 1:                                       # HELLO-shaped
            n = random.randint(150, 340)
            return bytes([1, 0, n >> 8, n & 255]) + os.urandom(4 + n)
        if kind == 2:                                       # recorded, changed
            b = bytearray(sample)
            for _ in range(random.randint(1, 8)):
                i = random.randrange(len(b))
                b[i] ^= random.randint(1, 255)
            return bytes(b)
        return os.urandom(random.randint(1, 600))           # plain noise

    def over():
        return os.path.exists(stop) or time.monotonic() > deadline

    def worker(w):
        k = w
        while not over():
            s = socket.socket()
            s.settimeout(0.25)
            back, reset = b"", False
            try:
                s.bind((source, 0))
                s.connect(("127.0.0.1", port))
                s.sendall(payload(k))
                held = time.monotonic() + 8
                while time.monotonic() < held:   # until the far end closes
                    try:
                        b = s.recv(4096)
                    except socket.timeout:
                        if over():
                            break
                        continue
                    except ConnectionResetError:
                        reset = True             # (closed with a reset: no byte)
                        break
                    if not b:
                        break
                    back += b
            except OSError as e:
                with lock:
                    tally["errors"] += 1         # (a connect or send that failed)
                    why = type(e).__name__ if e.errno is None else os.strerror(e.errno)
                    errors[why] = errors.get(why, 0) + 1
                time.sleep(0.005)
                continue
            finally:
                s.close()
            with lock:
                tally["connections"] += 1
                tally["resets"] += reset
                if back:
                    tally["answered"] += 1
                    tally["bytes_back"] += len(back)
                    statuses[back[0]] = statuses.get(back[0], 0) + 1
            k += conns

    threads = [threading.Thread(target=worker, args=(w,), daemon=True)
               for w in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max_secs + 10)
    st = " ".join("%d:%d" % kv for kv in sorted(statuses.items())) or "-"
    if errors:
        print("attack: failed connects or sends: %s" % ", ".join(
            "%s %d" % kv for kv in sorted(errors.items())), file=sys.stderr)
    write_atomic(opt(args, "--report"),
                 "connections %d answered %d bytes_back %d resets %d errors %d statuses %s\n"
                 % (tally["connections"], tally["answered"], tally["bytes_back"],
                    tally["resets"], tally["errors"], st))


# ---- steady ---------------------------------------------------------------
def steady(args):
    port, stop = int(opt(args, "--port")), opt(args, "--stop-file")
    report = opt(args, "--report")
    rounds = failures = 0
    worst = 0.0
    s = None
    deadline = time.monotonic() + 120
    while not os.path.exists(stop) and time.monotonic() < deadline:
        msg = os.urandom(64)
        t0 = time.monotonic()
        try:
            if s is None:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(msg)
            got = b""
            while len(got) < 64:
                b = s.recv(64 - len(got))
                if not b:
                    raise OSError("the channel closed")
                got += b
            if got != msg:
                raise OSError("the echo differs")
            worst = max(worst, time.monotonic() - t0)
        except OSError:
            failures += 1
            if s is not None:
                s.close()
            s = None
        rounds += 1
        if rounds == 1:
            write_atomic(report + ".up", "up\n")
        time.sleep(0.05)
    write_atomic(report, "rounds %d failures %d worst_ms %.0f\n"
                 % (rounds, failures, worst * 1000))


# ---- fresh ----------------------------------------------------------------
def fresh(args):
    binary, log = opt(args, "--bin"), opt(args, "--log")
    secs = float(opt(args, "--secs"))
    client = args[args.index("--") + 1:]
    port_file = log + ".port"
    t0 = time.monotonic()
    with open(log, "w") as err:
        p = subprocess.Popen([binary, "client"] + client + ["--port-file", port_file],
                             stderr=err)
    elapsed, why = None, ""
    try:
        limit = t0 + secs + 3                 # (measured, then judged)
        while not os.path.exists(port_file) and time.monotonic() < limit:
            time.sleep(0.005)
        port = int(open(port_file).read())
        s = socket.create_connection(("127.0.0.1", port), timeout=max(0.1, limit - time.monotonic()))
        msg = b"fresh client %d" % os.getpid()
        s.sendall(msg)
        got = b""
        while len(got) < len(msg):
            b = s.recv(100)
            if not b:
                break
            got += b
        s.close()
        if got == msg:
            elapsed = time.monotonic() - t0
        else:
            why = "no echo (got %r)" % got
    except (OSError, ValueError) as e:
        why = str(e) or type(e).__name__
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(5)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    if elapsed is None:
        print("no echo: %s" % why)
        return 1
    print("%.3f" % elapsed)
    return 0 if elapsed <= secs else 1


if __name__ == "__main__":
    cmd, rest = sys.argv[1], sys.argv[2:]
    rc = {"record": record, "attack": attack, "steady": steady, "fresh": fresh}[cmd](rest)
    sys.exit(rc or 0)
