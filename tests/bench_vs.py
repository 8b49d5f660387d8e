#!/usr/bin/env python3
"""bench_vs.py - one bench program, this checkout against a git revision.

    make bench-vs REV=<rev> [BENCH=session] [ROUNDS=5]

Builds tests/bench_<BENCH>.c twice, -O2 like make bench: against the
headers of this checkout and against the headers of REV (git show, into
build/bench-vs/<rev>/, the bench source taken from this checkout so both
do the same work). Then runs the two programs in turn, ROUNDS times each,
alternating (so a machine that gets busier part-way weighs on both), and
prints for every figure line (a line with a number and a unit, the same
words on both sides) the median of each side, the spread (lowest and
highest) and the ratio now / before. A ratio reads the way the figure
does: for rates (MB/s, thousand/s) above 1 is faster now.

Every figure of both programs is printed; nothing is judged here (the bench
programs judge their own targets). Exit 1 only when a build or run fails.
"""
import os, re, statistics, subprocess, sys

NUM = re.compile(r"-?\d+(?:\.\d+)?")


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, **kw)
    if r.returncode not in (0, 1):   # 1: a bench missed a target, still figures
        sys.stdout.write(r.stdout)
        sys.exit("bench-vs: %s failed (%d)" % (" ".join(cmd), r.returncode))
    return r.stdout


FIG = re.compile(r"(-?\d+(?:\.\d+)?)\s*(MB/s|GB/s|million/s|thousand/s|"
                 r"cycles/byte|exec/s|ms|us|s|x)\b")


def figures(text):
    """{label: value} for every measured figure: a number followed by a
    unit (MB/s, thousand/s, x, s, ...). The label is the line with every
    number replaced by '#' and the figure's own marked '@', so two figures
    of one line are told apart (targets and verdicts left out)."""
    out = {}
    for line in text.splitlines():
        if line.startswith("target:"):
            continue
        for m in FIG.finditer(line):
            label = NUM.sub("#", line[:m.start()]) + "@" + NUM.sub("#", line[m.end(1):])
            label = label.strip()
            if label not in out:
                out[label] = float(m.group(1))
    return out


def main():
    rev = os.environ.get("REV")
    bench = os.environ.get("BENCH") or "session"
    rounds = int(os.environ.get("ROUNDS") or "5")
    b = os.environ.get("B") or "build"
    cc = os.environ.get("CC") or "cc"
    flags = os.environ.get("BENCH_FLAGS", "-O2 -g -DNDEBUG -std=c99").split()
    if not rev:
        sys.exit("bench-vs: REV=<git revision> needed")
    sha = run(["git", "rev-parse", "--short", rev]).strip()
    src = "tests/bench_%s.c" % bench
    if not os.path.exists(src):
        sys.exit("bench-vs: no %s" % src)
    old = os.path.join(b, "bench-vs", sha)
    os.makedirs(os.path.join(old, "tests"), exist_ok=True)
    headers = run(["git", "ls-tree", "--name-only", sha]).split()
    for h in [x for x in headers if x.endswith(".h")]:
        with open(os.path.join(old, h), "w") as f:
            f.write(run(["git", "show", "%s:%s" % (sha, h)]))
    for t in ("bench_%s.c" % bench, "bench_common.h"):
        with open(os.path.join("tests", t)) as fi, \
                open(os.path.join(old, "tests", t), "w") as fo:
            fo.write(fi.read())
    os.makedirs(os.path.join(old, "examples"), exist_ok=True)
    for f in os.listdir("examples"):   # what benches include from there
        if f.endswith(".h"):
            with open(os.path.join("examples", f)) as fi, \
                    open(os.path.join(old, "examples", f), "w") as fo:
                fo.write(fi.read())
    progs = {"now": os.path.join(b, "bench-vs", "now_" + bench),
             "before": os.path.join(old, "bench_" + bench)}
    run([cc] + flags + [src, "-o", progs["now"], "-lm"])
    run([cc] + flags + [os.path.join(old, "tests", "bench_%s.c" % bench),
                        "-o", progs["before"], "-lm"])
    got = {"now": [], "before": []}
    for r in range(rounds):
        for side in ("before", "now") if r % 2 else ("now", "before"):
            got[side].append(figures(run([progs[side]])))
            print("bench-vs: round %d/%d %s done" % (r + 1, rounds, side), flush=True)
    print("bench_%s: now (this checkout) vs before (%s), %d runs each, "
          "alternating; median [lowest..highest]" % (bench, sha, rounds))
    labels = [l for l in got["now"][0] if all(l in g for g in got["now"] + got["before"])]
    for l in labels:
        med = {}
        for side in ("now", "before"):
            v = [g[l] for g in got[side]]
            med[side] = (statistics.median(v), min(v), max(v))
        ratio = med["now"][0] / med["before"][0] if med["before"][0] else float("nan")
        print("  %s\n      now %g [%g..%g]  before %g [%g..%g]  now/before %.3f" %
              (l[:110], med["now"][0], med["now"][1], med["now"][2],
               med["before"][0], med["before"][1], med["before"][2], ratio))
    missing = [l for l in got["before"][0] if l not in labels]
    for l in missing + [l for l in got["now"][0] if l not in labels]:
        print("  (only on one side or not every run: %s)" % l[:70])


if __name__ == "__main__":
    main()
