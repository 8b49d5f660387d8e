#!/usr/bin/env python3
"""mutants.py - mutation testing of a header's implementation (DESIGN 2.8).

    python3 tests/mutants.py --header alkcodec.h [--count 60] [--seed 1]
                             [--timeout 300] [--since REV] [--list]
                             [--between START END]

Makes one small source mutation at a time in a scratch copy of the tree
(never the working tree): flip a comparison, swap && and ||, shift an integer
constant by one, negate an if condition, swap ++/-- or += / -=, delete a
statement, make a function return early. Each mutant is rebuilt and judged
by the fast gate (`make fast-gate`: unit tests + corpus replay, under
ASan+UBSan). A mutant the gate fails on is killed; one it passes on survived;
one that does not compile did not build (and does not count).

Selection is deterministic: every candidate mutation of the implementation
section is enumerated in file order, shuffled with --seed, and the first
--count are run; with --since REV only the lines the change since REV added
or rewrote are candidates (git diff -U0), so a change's own code is judged;
with --between START END only the lines from the first one holding START to
the next one holding END (e.g. one section of the header).
Survivors are listed with file:line and the mutation. A
survivor that is equivalent to the original (no test can tell them apart)
is documented in tests/mutants_equivalent.txt as
    <header>: <original line> => <mutated line>  # why
and reported as such rather than as a gap.
"""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP_DIRS = {".git", "build", "out"}

REL = [  # (pattern, replacement, label); lookarounds keep ->, <<, >>, <=
    (r"(?<![<>=!-])<(?![<=])", "<=", "< to <="),
    (r"<=", "<", "<= to <"),
    (r"(?<![<>=-])>(?![>=])", ">=", "> to >="),
    (r">=", ">", ">= to >"),
    (r"==", "!=", "== to !="),
    (r"!=", "==", "!= to =="),
    (r"&&", "||", "&& to ||"),
    (r"\|\|", "&&", "|| to &&"),
    (r"\+\+", "--", "++ to --"),
    (r"(?<![-])--", "++", "-- to ++"),
    (r"\+=", "-=", "+= to -="),
    (r"-=", "+=", "-= to +="),
]
DECL = re.compile(r"^\s*(const\s+)?(static\s+)?(unsigned|int|size_t|ptrdiff_t|"
                  r"uint\d+_t|alkc_\w+|alksim_\w+|alkt_\w+|q2w_\w+|char|void)\b")


def implementation_range(lines, macro):
    # The implementation guard is the one that also tests <MACRO>_DONE (a
    # header may test its macro earlier, e.g. for feature macros).
    start = None
    guard = "#if defined(%s) && !defined(%s_DONE)" % (macro, macro)
    if not any(line.startswith(guard) for line in lines):
        guard = "#if defined(%s)" % macro
    for i, line in enumerate(lines):
        if start is None and line.startswith(guard):
            start = i + 1
        elif start is not None and "REVISION HISTORY" in line:
            return start, i
    if start is None:
        sys.exit("mutants: no '#if defined(%s)' section found" % macro)
    return start, len(lines)


def code_part(line):
    """The line without a trailing comment; None for comment/preprocessor."""
    s = line.strip()
    if not s or s.startswith(("/*", "*", "//", "#")):
        return None
    return re.sub(r"/\*.*?\*/", "", line).rstrip()


def candidates(lines, lo, hi):
    out = []
    in_string_table = False
    for i in range(lo, hi):
        code = code_part(lines[i])
        if code is None or "_ASSERT(" in code:
            continue  # weakening an internal assertion is unobservable
        if "X(" in code or "RESULT_LIST" in code:  # the message table
            in_string_table = True
            continue
        if in_string_table and code.strip().startswith('"'):
            continue
        in_string_table = False
        body = re.sub(r'"([^"\\]|\\.)*"', lambda m: "\0" * len(m.group(0)), code)
        for pat, rep, label in REL:
            for m in re.finditer(pat, body):
                new = code[:m.start()] + rep + code[m.end():]
                out.append((i, label, new))
        for m in re.finditer(r"(?<![\w.])(0x[0-9a-fA-F]+|\d+)(u|U|ul|UL)?(?![\w.])",
                             body):
            v = int(m.group(1), 0)
            for d in (1, -1):
                if v + d < 0:
                    continue
                lit = (hex(v + d) if m.group(1).startswith("0x") else str(v + d))
                new = code[:m.start()] + lit + (m.group(2) or "") + code[m.end():]
                out.append((i, "constant %s to %s" % (m.group(1), lit), new))
        m = re.match(r"^(\s*)(if|while) \((.*)\)(\s*\{?)$", code)
        if m:
            new = "%s%s (!(%s))%s" % m.groups()
            out.append((i, "negate %s condition" % m.group(2), new))
        s = code.strip()
        if (s.endswith(";") and s != ";" and not DECL.match(code)
                and s.count("(") == s.count(")")
                and not s.startswith(("return", "break", "continue", "}", "case", "default",
                                      "(void)"))
                and not code.rstrip().endswith(("(", ","))):
            indent = code[:len(code) - len(code.lstrip())]
            out.append((i, "delete statement", indent + ";"))
        if (s.startswith("return ") and s != "return 0;"
                and not re.match(r"return (\w*_OK|NULL);", s)):
            indent = code[:len(code) - len(code.lstrip())]
            out.append((i, "return 0 instead", indent + "return 0;"))
    return out


def changed_lines(header, rev):
    """0-based indices of the lines of `header` added or rewritten since
    `rev` (the + side of git diff -U0)."""
    out = subprocess.run(["git", "diff", "-U0", rev, "--", header], cwd=ROOT,
                         stdout=subprocess.PIPE, check=True).stdout.decode()
    changed = set()
    for m in re.finditer(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", out, re.M):
        start, n = int(m.group(1)), int(m.group(2) or "1")
        changed.update(range(start - 1, start - 1 + n))
    return changed


def load_equivalents(header):
    path = os.path.join(ROOT, "tests", "mutants_equivalent.txt")
    eq = {}
    if not os.path.exists(path):
        return eq
    for raw in open(path, encoding="utf-8"):
        raw = raw.rstrip("\n")
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        head, _, why = raw.partition("  # ")
        name, _, rest = head.partition(": ")
        orig, _, new = rest.partition(" => ")
        if name == header:
            eq[(orig.strip(), new.strip())] = why.strip()
    return eq


def copy_tree(dst):
    def ignore(d, names):
        return [n for n in names if n in SKIP_DIRS and
                (n != "out" or os.path.basename(d) == "fuzz")]
    shutil.copytree(ROOT, dst, ignore=ignore, symlinks=True)


def run(cmd, cwd, timeout):
    """Runs cmd in its own process group; on timeout the whole group (make
    and the test it runs - a mutant can loop forever) is killed."""
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, "timeout"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--header", default="alkcodec.h")
    ap.add_argument("--count", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--list", action="store_true",
                    help="list the selected mutants without running them")
    ap.add_argument("--since", default=None,
                    help="only lines added or changed since this git revision")
    ap.add_argument("--between", nargs=2, default=None, metavar=("START", "END"),
                    help="only lines from the first holding START to the next "
                         "holding END")
    args = ap.parse_args()

    header = args.header
    macro = os.path.basename(header)[:-2].upper() + "_IMPLEMENTATION"
    src = open(os.path.join(ROOT, header), encoding="utf-8").read()
    lines = src.split("\n")
    lo, hi = implementation_range(lines, macro)
    cands = candidates(lines, lo, hi)
    if args.since:
        changed = changed_lines(header, args.since)
        cands = [c for c in cands if c[0] in changed]
    if args.between:
        first = next((i for i in range(lo, hi) if args.between[0] in lines[i]), None)
        last = next((i for i in range(first or lo, hi)
                     if args.between[1] in lines[i]), None)
        if first is None or last is None:
            sys.exit("mutants: --between: no such lines")
        cands = [c for c in cands if first <= c[0] < last]
    rnd = random.Random(args.seed)
    rnd.shuffle(cands)
    chosen = cands[:args.count]
    print("mutants: %s: %d candidate mutations in lines %d-%d, running %d "
          "(seed %d)" % (header, len(cands), lo + 1, hi, len(chosen), args.seed))
    if args.list:
        for i, label, new in chosen:
            print("  %s:%d  %s: %s" % (header, i + 1, label, new.strip()))
        return 0

    equivalents = load_equivalents(header)
    scratch = tempfile.mkdtemp(prefix="alk-mutants-")
    tree = os.path.join(scratch, "tree")
    copy_tree(tree)
    target = os.path.join(tree, header)
    # Judge with the unit test and the harnesses that use this header: a
    # harness source naming it directly or through one local include.
    base = os.path.basename(header)[:-2]
    fuzz_targets = []
    for name in sorted(os.listdir(os.path.join(ROOT, "fuzz"))):
        if not name.endswith(".c"):
            continue
        text = open(os.path.join(ROOT, "fuzz", name), encoding="utf-8").read()
        if "LLVMFuzzerTestOneInput" not in text:
            continue
        seen = header in text
        for inc in re.findall(r'#include "([^"]+)"', text):
            path = os.path.normpath(os.path.join(ROOT, "fuzz", inc))
            if os.path.exists(path) and header in open(path, encoding="utf-8").read():
                seen = True
        if seen:
            fuzz_targets.append(name[:-2])
    scope = ["B=build-mutant", "UNIT_TESTS=" + base,
             "FUZZ_TARGETS=" + " ".join(fuzz_targets)]
    print("mutants: judged by tests/test_%s.c and the corpora of: %s"
          % (base, " ".join(fuzz_targets) or "(none)"))
    gate = ["make", "-s", "fast-gate"] + scope
    build = ["make", "-s", "all"] + scope
    rc, out = run(build, tree, args.timeout)
    if rc != 0:
        print(out[-3000:])
        sys.exit("mutants: the unmutated tree does not build")
    t_gate = time.time()
    rc, out = run(gate, tree, args.timeout)
    if rc != 0:
        print(out[-3000:])
        sys.exit("mutants: the unmutated tree fails the fast gate")
    # A mutant that loops forever is killed after ten times the clean gate.
    limit = min(args.timeout, max(30, int(10 * (time.time() - t_gate))))
    print("mutants: clean gate %.1f s; per-mutant limit %d s"
          % (time.time() - t_gate, limit))

    killed, survived, nobuild, equivalent = [], [], [], []
    t0 = time.time()
    try:
        for n, (i, label, new) in enumerate(chosen, 1):
            mutated = list(lines)
            mutated[i] = new
            with open(target, "w", encoding="utf-8") as f:
                f.write("\n".join(mutated))
            where = "%s:%d" % (header, i + 1)
            desc = "%s  %s: %s" % (where, label, new.strip())
            rc, out = run(build, tree, args.timeout)
            if rc is None:
                verdict = "killed (build/test timeout)"
                killed.append(desc)
            elif rc != 0:
                verdict = "did not build"
                nobuild.append(desc)
            else:
                rc, out = run(gate, tree, limit)
                if rc == 0:
                    key = (code_part(lines[i]).strip(), new.strip())
                    if key in equivalents:
                        verdict = "survived: documented equivalent"
                        equivalent.append("%s  (%s)" % (desc, equivalents[key]))
                    else:
                        verdict = "SURVIVED"
                        survived.append(desc)
                else:
                    verdict = "killed" if rc is not None else "killed (timeout)"
                    killed.append(desc)
            print("[%2d/%d] %-30s %s" % (n, len(chosen), verdict, desc),
                  flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    judged = len(killed) + len(survived)
    print()
    print("mutants: %d run in %.0f s: %d killed, %d survived, %d equivalent "
          "(documented), %d did not build" % (len(chosen), time.time() - t0,
                                             len(killed), len(survived),
                                             len(equivalent), len(nobuild)))
    if judged:
        print("kill rate: %.1f%% of the %d mutants that built and are not "
              "documented equivalents" % (100.0 * len(killed) / judged, judged))
    for s in survived:
        print("  SURVIVOR %s" % s)
    for s in equivalent:
        print("  equivalent %s" % s)
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
