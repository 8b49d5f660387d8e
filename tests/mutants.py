#!/usr/bin/env python3
"""mutants.py - mutation testing of a header's implementation (DESIGN 2.8).

    python3 tests/mutants.py --header alkcodec.h|all [--count 60] [--seed 1]
                             [--gate fast|replay] [--timeout 300]
                             [--since REV] [--list] [--between START END] [--only N,...]
                             [--families F,...]
                             [--baseline FILE] [--write-baseline FILE]

Makes one small source mutation at a time in a scratch copy of the tree
(never the working tree). Each mutant is rebuilt and judged by the fast
gate (`make fast-gate`: unit tests + corpus replay, under ASan+UBSan). A
mutant the gate fails on is killed; one it passes on survived; one that
does not compile did not build (and does not count).

The mutations come in families. The operator families change one token:
    flip-comparison   < to <=, <= to <, > to >=, >= to >, == to !=, != to ==
    swap-logical      && to ||, || to &&
    swap-increment    ++ to --, -- to ++, += to -=, -= to +=
    shift-constant    an integer constant one up or one down
    negate-condition  if (c) / while (c) to if (!(c))
    return-early      return x; to return 0;
The semantic families change what a statement does the way real bugs do
(an outside check found such bugs survive far more often than operator
mutants, issue 41):
    delete-statement  a statement deleted (an assignment, a call, a break,
                      a continue, a one-line if) by `if (0) ` in front of
                      it (of its first line when it spans several): the
                      names it uses stay used, so no unused-parameter or
                      set-but-not-used error stops the build, and an if's
                      body is not left empty (-Wempty-body). A break before
                      a case label becomes `/* fall through */`, an else
                      line `;`. A break at a switch's end or a continue at
                      a loop body's end (no change) is left out.
                      tests/mutants_equivalent.txt may list a deletion as
                      `=> ;`.
    drop-guard        an if whose body runs whatever the condition says:
                      if (c) to if ((c) || 1) - c is still evaluated, so
                      its side effects stay and the names it reads stay
                      used (if (1) can leave a variable set but not used);
                      a condition over several lines gets ` ? 1 : 1` before
                      its closing parenthesis. An if whose body leaves
                      (return, goto, break, continue) is left out: that is
                      return-early's and delete-statement's ground.
    swap-halves       bit order wrong: the operands of two neighbouring
                      terms of a | of shifts exchanged ((a << 8) | b to
                      (b << 8) | a, p[0] << 24 | p[1] << 16 to p[1] << 24 |
                      p[0] << 16), or a mask and a shift applied in the other
                      order ((x >> 8) & m to ((x & m) >> 8), and back).
    contents-to-length  a comparison of contents that only checks what the
                      lengths say: memcmp(a, b, n), strncmp and
                      alkt_ct_equal with n made 0 (equal whatever the
                      bytes), strcmp(a, b) made (strlen(a) != strlen(b));
                      memcmp and strcmp only where tested for equality.
    drop-reset        x->f = 0; deleted (as above) where the value is 0,
                      NULL, false, '\\0' or a *_NONE, *_FREE, *_IDLE, *_EMPTY
                      enumerator and the target a struct field: a state
                      change that leaves stale state behind.
    swap-remove-skip  in a loop that removes element i by moving the last
                      one into its place (a[i] = a[--n]; or a[i] = a[n - 1];
                      n--;, or *p = a[--n]; with p at element i): the i--
                      that has the moved element looked at deleted, or -
                      where the loop looks again by not advancing - i++
                      added, so the moved element is skipped. (alktunnel.h
                      has one such loop; the other headers none.)
--families F,... runs only those: names, or operator, semantic, all (the
default); make mutants FAMILIES=semantic. A semantic mutation that makes
the same line as an operator one (or as an earlier semantic one: a reset's
deletion is drop-reset's, not delete-statement's) is left out.

--gate replay judges by the corpus replay alone (`make replay` for the
harnesses that use the header, no unit test): the bar the oracles must meet
by themselves. It runs the replay one target:directory run at a time
(`make replay-runs` lists them), the quickest first as timed on the clean
tree, and stops at the first that fails, so a killed mutant costs a build
or two; a survivor still builds and runs them all. The run that killed a
mutant moves to the front for the next one. With --gate replay the
mutants are first built as schemata: every mutant whose line is one whole
statement or an if/while condition goes into one copy of the header
behind a run-time switch (alk__mut() == n, n from the environment's
ALK_MUTANT), the judging binaries are built once, and each such mutant
costs only its replay runs; a mutant whose schema line does not compile,
or whose line has another shape, is built alone as before
(--no-schemata: all of them). A schema mutant that alone would fail only
on a -Werror warning is judged rather than counted as not built. --header all runs --count mutants of each of the four headers.

--only N,... judges just those mutants of the same sample (the numbers a
run printed), on the tree as it is now: a run's survivors re-judged after
the oracles that should kill them were written.

Selection is deterministic and spread over the code: every candidate
mutation of the implementation section is enumerated, grouped by the
function it is in, and mutants are taken round-robin over the functions
(in an order shuffled with --seed) until --count, so a sample reaches every
function before it takes a second mutant of any; within a function they
are taken round-robin over its families (shuffled), each family's own
candidates shuffled, so a function gives one mutant of every family it has
before a second of any (a rare family is not crowded out by the constants);
with --since REV only the lines the change since REV added
or rewrote are candidates (git diff -U0), so a change's own code is judged;
with --between START END only the lines from the first one holding START to
the next one holding END (e.g. one section of the header).
Survivors are listed with file:line and the mutation. A
survivor that is equivalent to the original (no test can tell them apart)
is documented in tests/mutants_equivalent.txt as
    <header> [<function>]: <original line> => <mutated line>  # why
and reported as such rather than as a gap. Without " [<function>]" an
entry holds wherever its line's text occurs - where the same text stands
in another function it may not be equivalent there.

The summary gives the kill rate per header, per section of the header
(its "/* ---- name" comments) and per family (the operator families and
the semantic ones apart, each group with its total), lists the survivors
with file:line, and ends with one line per header for the semantic
families: killed of the non-equivalent mutants that built.
--write-baseline FILE writes per header the kill rate of the whole sample
(with the gate, seed and count that made it, and families=... when
--families restricted the run) and, when semantic families ran, a second
line with " semantic" before the colon - tests/mutants_baseline.txt is
such a file; --baseline FILE compares this run with the lines of the same
header, gate, seed, count and families there (a line without families=
is a run of all of them; lines without " semantic" written before the
semantic families existed still parse) and fails if a rate dropped.
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

REL = [  # (pattern, replacement, label, family); lookarounds keep ->, <<, >>, <=
    (r"(?<![<>=!-])<(?![<=])", "<=", "< to <=", "flip-comparison"),
    (r"<=", "<", "<= to <", "flip-comparison"),
    (r"(?<![<>=-])>(?![>=])", ">=", "> to >=", "flip-comparison"),
    (r">=", ">", ">= to >", "flip-comparison"),
    (r"==", "!=", "== to !=", "flip-comparison"),
    (r"!=", "==", "!= to ==", "flip-comparison"),
    (r"&&", "||", "&& to ||", "swap-logical"),
    (r"\|\|", "&&", "|| to &&", "swap-logical"),
    (r"\+\+", "--", "++ to --", "swap-increment"),
    (r"(?<![-])--", "++", "-- to ++", "swap-increment"),
    (r"\+=", "-=", "+= to -=", "swap-increment"),
    (r"-=", "+=", "-= to +=", "swap-increment"),
]
# The operator families change one token; the semantic ones change what a
# statement does in the ways real bugs do (issue 41: an outside check found
# such bugs survive the gate far more often than operator mutants).
OPERATOR_FAMILIES = ["flip-comparison", "swap-logical", "swap-increment",
                     "shift-constant", "negate-condition", "return-early"]
SEMANTIC_FAMILIES = ["delete-statement", "drop-guard", "swap-halves",
                     "contents-to-length", "drop-reset", "swap-remove-skip"]
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


def line_code(line):
    """code_part, and for a line that begins with a dereference (*p = x;,
    which code_part takes for a comment's continuation) its code."""
    code = code_part(line)
    s = line.strip()
    if code is None and s.startswith("*") and not s.startswith(("*/", "* ")) and \
            s != "*" and re.search(r"[;{})]$", re.sub(r"/\*.*?\*/", "", s).rstrip()):
        return re.sub(r"/\*.*?\*/", "", line).rstrip()
    return code


def code_part(line):
    """The line without a trailing comment; None for comment/preprocessor."""
    s = line.strip()
    if not s or s.startswith(("/*", "*", "//", "#")):
        return None
    return re.sub(r"/\*.*?\*/", "", line).rstrip()


def candidates(lines, lo, hi):
    """Every candidate mutation of lines [lo, hi): (line index, family,
    label, mutated line). The operator families first; a semantic mutant
    whose line text an earlier one already makes is left out (a reset's
    deletion is drop-reset's, not delete-statement's)."""
    out = []
    ctx = Context(lines, lo, hi)
    in_string_table = False
    for i in range(lo, hi):
        code = code_part(lines[i])
        if code is None and ctx.text[i] is not None and "_ASSERT(" not in ctx.text[i]:
            # (a line code_part takes for a comment: *p = x;) the semantic
            # families only - the operator ones stay as they were
            out += semantic_at(ctx, i, ctx.text[i])
            continue
        if code is None or "_ASSERT(" in code:
            continue  # weakening an internal assertion is unobservable
        if "X(" in code or "RESULT_LIST" in code:  # the message table
            in_string_table = True
            continue
        if in_string_table and code.strip().startswith('"'):
            continue
        in_string_table = False
        body = re.sub(r'"([^"\\]|\\.)*"', lambda m: "\0" * len(m.group(0)), code)
        for pat, rep, label, family in REL:
            for m in re.finditer(pat, body):
                new = code[:m.start()] + rep + code[m.end():]
                out.append((i, family, label, new))
        for m in re.finditer(r"(?<![\w.])(0x[0-9a-fA-F]+|\d+)(u|U|ul|UL)?(?![\w.])",
                             body):
            v = int(m.group(1), 0)
            for d in (1, -1):
                if v + d < 0:
                    continue
                lit = (hex(v + d) if m.group(1).startswith("0x") else str(v + d))
                new = code[:m.start()] + lit + (m.group(2) or "") + code[m.end():]
                out.append((i, "shift-constant", "constant %s to %s" % (m.group(1), lit),
                            new))
        m = re.match(r"^(\s*)(if|while) \((.*)\)(\s*\{?)$", code)
        if m:
            new = "%s%s (!(%s))%s" % m.groups()
            out.append((i, "negate-condition", "negate %s condition" % m.group(2), new))
        s = code.strip()
        if (s.startswith("return ") and s != "return 0;"
                and s.endswith(";") and s.count("(") == s.count(")")
                and not re.match(r"return (\w*_OK|NULL);", s)):
            indent = code[:len(code) - len(code.lstrip())]
            out.append((i, "return-early", "return 0 instead", indent + "return 0;"))
        out += semantic_at(ctx, i, code)
    uniq, keys = [], set()
    for c in out:
        key = (c[0], c[3].strip())
        if c[1] in SEMANTIC_FAMILIES and key in keys:
            continue
        keys.add(key)
        uniq.append(c)
    return uniq


def semantic_at(ctx, i, code):
    out = []
    for fam, label, new in semantic_mutations(ctx, i, code):
        at = i
        if "@" in fam:   # placed on a later line (a condition's last one)
            fam, at = fam.split("@")[0], int(fam.split("@")[1])
        out.append((at, fam, label, new))
    return out


# ---- the semantic families ----
LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
JUMP = re.compile(r"^(?:return|goto|break|continue)\b")
IF_AT = re.compile(r"^(\s*(?:\}\s*)?(?:else\s+)?)if\s*\(")
LOOP_AT = re.compile(r"^\s*(?:\}\s*)?(for|while|do)\b")
CAST = re.compile(r"^\(\s*(?:const\s+|unsigned\s+|signed\s+)*(?:unsigned|signed|int|char|"
                  r"short|long|size_t|uint\d+_t|int\d+_t|uintptr_t)"
                  r"(?:\s+(?:int|long|char))*\s*\)\s*")
OPERAND = re.compile(r"^\*?[a-z_]\w*(?:\s*(?:->|\.)\s*\w+|\[[^\[\]]+\])*$")
PRIMARY = re.compile(r"\s*(0x[0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|[A-Za-z_]\w*"
                     r"(?:(?:->|\.)\w+|\[[^\[\]]+\])*)")
RESET_VALUE = re.compile(r"^(?:0|0[uU]|0[uU]?[lL]{1,2}|NULL|false|'\\0'|"
                         r"[A-Z][A-Z0-9_]*_(?:NONE|FREE|IDLE|EMPTY))$")


def mask(code):
    """code with its string and character literals blanked (same length):
    a quote or bracket inside one is not syntax."""
    return LITERAL.sub(lambda m: "\0" * len(m.group(0)), code)


def match_paren(s, p):
    """The index of the bracket closing the one at s[p], or None when it
    is not closed in s."""
    depth = 0
    for k in range(p, len(s)):
        if s[k] in "([{":
            depth += 1
        elif s[k] in ")]}":
            depth -= 1
            if depth == 0:
                return k
    return None


def top_level(s, a, b):
    """The indices in s[a:b] at bracket depth 0."""
    depth = 0
    for k in range(a, b):
        ch = s[k]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0:
            yield k


class Context:
    """The header's lines with their code (comments gone, literals
    blanked), and the questions about block structure the semantic
    families ask."""

    def __init__(self, lines, lo, hi):
        self.lines, self.lo, self.hi = lines, lo, hi
        # text: what code_part gives, and also the code lines it takes for
        # comment lines (*p = x; starts with a star); code: text with the
        # literals and an unclosed trailing comment blanked
        self.text, self.code = [], []
        in_comment = False
        for line in lines:
            text = None if in_comment else line_code(line)
            flat = re.sub(r"/\*.*?\*/", "", mask(line))
            if in_comment:
                in_comment = "*/" not in flat
            elif "/*" in flat:
                in_comment = True
            self.text.append(text)
            code = mask(text or "")
            at = code.find("/*")
            self.code.append(code if at < 0 else code[:at] + " " * (len(code) - at))

    def next_code(self, i):
        for j in range(i + 1, self.hi):
            if self.code[j].strip():
                return j
        return None

    def prev_code(self, i):
        for j in range(i - 1, self.lo - 1, -1):
            if self.code[j].strip():
                return j
        return None

    def opener(self, i):
        """The line of the { that the } opening line i closes."""
        depth = 0
        text = self.code[i]
        text = text[:text.index("}") + 1] if "}" in text else text
        for j in range(i, self.lo - 1, -1):
            for ch in reversed(text if j == i else self.code[j]):
                if ch == "}":
                    depth += 1
                elif ch == "{":
                    depth -= 1
                    if depth == 0:
                        return j
        return None

    def closer(self, i, col):
        """The line of the } closing the { at line i, column col."""
        depth = 0
        for j in range(i, self.hi):
            text = self.code[j][col:] if j == i else self.code[j]
            for ch in text:
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                    if depth == 0:
                        return j
        return None

    def header(self, j):
        """The first line of the statement header (if/for/while/switch ...)
        whose line j ends: a multi-line condition is followed back to its
        opening line."""
        text = self.code[j].rstrip()
        if text.endswith("{"):
            text = text[:-1].rstrip()
        if not text.endswith(")"):
            return j
        depth = 0
        for k in range(j, max(self.lo, j - 12) - 1, -1):
            t = self.code[k] if k != j else text
            for ch in reversed(t):
                if ch == ")":
                    depth += 1
                elif ch == "(":
                    depth -= 1
            if depth <= 0:
                return k
        return j

    def braceless_parents(self, h):
        """The headers (for (...), if (...) without a brace) whose body
        the statement starting on line h is, innermost first."""
        out = []
        while True:
            p = self.prev_code(h)
            if p is None or not self.code[p].rstrip().endswith(")"):
                return out
            h = self.header(p)
            if not re.match(r"^\s*(?:\}\s*)?(?:else\s+)?(if|for|while)\b", self.code[h]):
                return out
            out.append(h)

    def enclosing(self, i):
        """The header lines of the blocks and braceless bodies around line
        i, innermost first."""
        out, depth = self.braceless_parents(i), 0
        for j in range(i - 1, self.lo - 1, -1):
            for ch in reversed(self.code[j]):
                if ch == "}":
                    depth += 1
                elif ch == "{":
                    if depth == 0:
                        out.append(self.header(j))
                        out += self.braceless_parents(self.header(j))
                    else:
                        depth -= 1
            if self.code[j].startswith(("static", "ALK", "Q2W")) or \
                    (self.code[j].strip() and not self.code[j][0].isspace()
                     and self.code[j].rstrip() == "{"):
                break
        return out

    def statement_end(self, i):
        """The line ending the statement that starts on line i (within 12
        lines), or None."""
        depth = 0
        for j in range(i, min(self.hi, i + 12)):
            for ch in self.code[j]:
                if ch in "([":
                    depth += 1
                elif ch in ")]":
                    depth -= 1
            t = self.code[j].rstrip()
            if depth == 0 and t.endswith(";"):
                return j
            if t.endswith(("{", "}")) or depth < 0:
                return None
        return None


def is_declaration(code):
    s = code.strip()
    if s.startswith(("goto ", "return ", "return;")):
        return False
    if re.match(r"^[A-Za-z_]\w*\s*(\(|\[|->|\.|=|\+\+|--|[-+*/%&|^]=|<<=|>>=)", s) \
            and not re.match(r"^(const|static|unsigned|signed|struct|enum|union)\b", s):
        return False   # a call or an assignment
    return bool(DECL.match(code) or ANY_DECL.match(code))


def deletion(ctx, i, code):
    """What deleting the one-line statement on line i leaves - the
    statement behind if (0), so the names it uses are still used (no
    unused-parameter or set-but-not-used error) and an if's body is not
    empty (-Wempty-body); a fall-through comment for a break before a case
    label (if (0) break; falls through unmarked); ';' for an else line -
    or None when the line is no such statement or deleting it changes
    nothing."""
    s = code.strip()
    if not (s.endswith(";") and s != ";" and s.count("(") == s.count(")")):
        return None
    if is_declaration(code) or code.rstrip().endswith(("(", ",")) or \
            s.startswith(("return", "}", "case", "default", "(void)")):
        return None
    if not statement_start(ctx.lines, i):
        return None
    if i + 1 < ctx.hi and ctx.lines[i + 1].strip().startswith("else"):
        return None
    indent = code[:len(code) - len(code.lstrip())]
    nxt = ctx.next_code(i)
    nxt_text = ctx.code[nxt].strip() if nxt is not None else ""
    if s in ("break;", "continue;"):
        if nxt_text.startswith("}"):
            op = ctx.opener(nxt)
            head = ctx.code[ctx.header(op)] if op is not None else ""
            if s == "break;" and re.match(r"^\s*switch\b", head):
                return None   # the switch's end: nothing changes
            if s == "continue;" and LOOP_AT.match(head):
                return None   # the loop body's end: nothing changes
            after = ctx.next_code(nxt)
            if s == "break;" and after is not None and \
                    re.match(r"^\s*(case\b|default\s*:)", ctx.code[after]):
                return None   # a fall-through no comment can mark
        if s == "break;" and re.match(r"^(case\b|default\s*:)", nxt_text):
            return indent + "/* fall through */"
    if s.startswith("else") or re.match(r"^\w+\s*:(?!:)", s):
        return indent + ";"   # (the else branch goes; a label would still be reached)
    return indent + "if (0) " + s


def semantic_mutations(ctx, i, code):
    """The semantic families' mutations of line i: (family, label, new)."""
    out = []
    out += swap_remove_skip(ctx, i, code)
    out += drop_reset(ctx, i, code)
    out += contents_to_length(ctx, i, code)
    out += swap_halves(ctx, i, code)
    out += drop_guard(ctx, i, code)
    out += delete_statement(ctx, i, code)
    return out


def delete_statement(ctx, i, code):
    """A statement on one line (a call, an assignment, a break, a continue,
    a one-line if) deleted; a statement over several lines, from its first
    line, by if (0) in front."""
    new = deletion(ctx, i, code)
    if new is not None:
        return [("delete-statement", "delete %s" % code.strip(), new)]
    s = ctx.code[i].strip()
    if not s or s.endswith((";", "{", "}", "\\")) or \
            re.match(r"^(if|for|while|switch|return|do|else|case|default|goto)\b", s) or \
            s.startswith(("{", "}", "(void)")) or is_declaration(code) or \
            s.count("(") <= s.count(")") or not statement_start(ctx.lines, i):
        return []
    end = ctx.statement_end(i)
    if end is None or end == i:
        return []
    nxt = ctx.next_code(end)
    if nxt is not None and ctx.code[nxt].strip().startswith("else"):
        return []
    indent = code[:len(code) - len(code.lstrip())]
    return [("delete-statement", "delete the statement of lines %d-%d by if (0)"
             % (i + 1, end + 1), indent + "if (0) " + code.lstrip())]


def drop_reset(ctx, i, code):
    """x->f = 0; (0, NULL, false, a *_NONE/_FREE/_IDLE/_EMPTY enumerator
    into a struct field) deleted: a state change that leaves stale state."""
    s = ctx.code[i].strip()
    if not s.endswith(";"):
        return []
    parts = [s[:k] for k in top_level(s, 0, len(s))
             if s[k] == "=" and s[k - 1] not in "=!<>+-*/%&|^" and s[k + 1] != "="]
    if not parts:
        return []
    value = s[s.rindex("=") + 1:-1].strip()
    target = s[:s.index("=")]
    if not RESET_VALUE.match(value) or "_ERR_" in value or \
            not re.search(r"->|\.", target) or "(" in target or \
            target.lstrip().startswith("*"):
        return []
    new = deletion(ctx, i, code)
    return [("drop-reset", "delete %s" % code.strip(), new)] if new else []


def contents_to_length(ctx, i, code):
    """memcmp(a, b, n) / strncmp / alkt_ct_equal with n made 0, strcmp(a, b)
    made a comparison of strlen: only what the lengths say is checked.
    memcmp and strcmp only where the result is tested for equality."""
    out = []
    s = ctx.code[i]
    for m in re.finditer(r"\b(memcmp|strncmp|strcmp|alkt_ct_equal)\s*\(", s):
        p = m.end() - 1
        e = match_paren(s, p)
        if e is None:
            continue
        name = m.group(1)
        before, after = s[:m.start()].rstrip(), s[e + 1:]
        if re.search(r"\w$", before) and not re.search(r"\breturn$", before):
            continue   # int alkt_ct_equal(...): the definition
        equality = (re.match(r"^\s*[!=]=\s*0\b", after) or before.endswith("!") or
                    (before.endswith(("(", "&&", "||")) and
                     re.match(r"^\s*(\)|&&|\|\||;)", after) and
                     not re.search(r"\breturn$", before)))
        if name != "alkt_ct_equal" and not equality:
            continue   # an ordering (a sort's comparison) is left alone
        commas = [k for k in top_level(s, p + 1, e) if s[k] == ","]
        if name == "strcmp" and len(commas) == 1:
            a, b = code[p + 1:commas[0]].strip(), code[commas[0] + 1:e].strip()
            new = code[:m.start()] + "(strlen(%s) != strlen(%s))" % (a, b) + code[e + 1:]
            out.append(("contents-to-length", "strcmp to a comparison of lengths", new))
        elif name != "strcmp" and len(commas) == 2:
            n = code[commas[1] + 1:e].strip()
            if n == "0":
                continue
            new = code[:commas[1] + 1] + " 0" + code[e:]
            out.append(("contents-to-length", "%s compares no bytes (length %s to 0)"
                        % (name, n), new))
    return out


def shift_terms(s, a, b):
    """The terms of the | combination s[a:b]: (operand start, end, shift
    text) with the operand's cast left out, None for a term of another
    shape."""
    cuts = [k for k in top_level(s, a, b) if s[k] == "|"]
    out = []
    for x, y in zip([a] + [k + 1 for k in cuts], cuts + [b]):
        while x < y and s[x].isspace():
            x += 1
        while y > x and s[y - 1].isspace():
            y -= 1
        if x == y:
            continue   # a line that begins or ends with the |
        while s[x] == "(" and match_paren(s, x) == y - 1:
            x, y = x + 1, y - 1
        ops = [k for k in top_level(s, x, y) if s[k:k + 2] in ("<<", ">>")
               and s[k + 2:k + 3] != "=" and (k == x or s[k - 1] not in "<>")]
        if any(s[k] in "&^?=!<>+-*/%" for k in top_level(s, x, y) if k not in ops and
               k - 1 not in ops and not (s[k] == "-" and s[k + 1:k + 2] == ">")
               and not (s[k] == ">" and s[k - 1] == "-")) or len(ops) > 1:
            out.append(None)
            continue
        end = ops[0] if ops else y
        while end > x and s[end - 1].isspace():
            end -= 1
        shift = s[ops[0] + 2:y].strip() if ops else ""
        c = CAST.match(s[x:end])
        start = x + (c.end() if c else 0)
        operand = s[start:end]
        if not OPERAND.match(operand) or operand.isupper():
            out.append(None)
            continue
        out.append((start, end, (s[ops[0]:ops[0] + 2] if ops else "") + shift))
    return out


def group_of(s, k):
    """The span of the expression the | at s[k] is a top-level operator
    of: out to an unmatched bracket, a comma, ;, ?, :, && or ||, or an
    assignment. None when a comparison stands in it (a | b == c)."""
    a = k
    depth = 0
    while a > 0:
        ch = s[a - 1]
        if ch in ")]":
            depth += 1
        elif ch in "([":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0:
            if ch in ",;?:{}" or s[a - 2:a] in ("&&", "||"):
                break
            if ch == "=":
                if s[a - 2:a - 1] in ("=", "!") or s[a - 3:a - 1] in ("<=", ">=") or \
                        (s[a - 2:a - 1] in ("<", ">") and s[a - 3:a - 2] not in ("<", ">")):
                    return None
                break
            if ch in "<>" and s[a - 2:a - 1] not in ("<", ">", "-") and \
                    s[a:a + 1] not in ("<", ">"):
                return None
        a -= 1
    b = k + 1
    depth = 0
    while b < len(s):
        ch = s[b]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0:
            if ch in ",;?:{}" or s[b:b + 2] in ("&&", "||"):
                break
            if ch == "=" or (ch in "<>" and s[b + 1:b + 2] not in ("<", ">", "=")
                             and s[b - 1] not in ("<", ">", "-")):
                if ch == "=" and s[b - 1] in "<>" and s[b - 2] == s[b - 1]:
                    break
                return None
        b += 1
    head = re.match(r"\s*return\b", s[a:b])
    return (a + head.end() if head else a), b


def swap_halves(ctx, i, code):
    """Bit order wrong: the operands of two neighbouring terms of a | of
    shifts exchanged ((a << 8) | b to (b << 8) | a), or a mask and a shift
    applied in the other order ((x >> 8) & m to (x & m) >> 8)."""
    s = ctx.code[i]
    out, groups = [], []
    for k, ch in enumerate(s):
        if ch == "|" and s[k - 1:k] != "|" and s[k + 1:k + 2] not in ("|", "="):
            g = group_of(s, k)
            if g and g not in groups:
                groups.append(g)
    for a, b in groups:
        terms = shift_terms(s, a, b)
        for t, u in zip(terms, terms[1:]):
            if t is None or u is None or t[2] == u[2]:
                continue
            x, y = code[t[0]:t[1]], code[u[0]:u[1]]
            if x.replace(" ", "") == y.replace(" ", ""):
                continue
            new = code[:t[0]] + y + code[t[1]:u[0]] + x + code[u[1]:]
            out.append(("swap-halves", "%s and %s swapped across the |" % (x, y), new))
    for p, ch in enumerate(s):
        if ch != "(" or CAST.match(s[p:]):
            continue
        e = match_paren(s, p)
        if e is None:
            continue
        before = s[:p].rstrip()
        if not (before == "" or before.endswith(("(", ",", ";", "|", "&", "^", "?", ":",
                                                 "{", "return"))
                or (before.endswith("=") and not before.endswith(("==", "!=", "<=", ">="))
                    or before.endswith(("<<=", ">>=")))):
            continue
        inner = list(top_level(s, p + 1, e))
        shifts = [k for k in inner if s[k:k + 2] in ("<<", ">>")]
        ands = [k for k in inner if s[k] == "&" and s[k + 1] not in "&=" and s[k - 1] != "&"]
        low = [k for k in inner if s[k] in "|^?=!<>,&" and k not in ands and
               all(k not in (q, q + 1) for q in shifts) and not
               (s[k] == ">" and s[k - 1] == "-")]
        if low:
            continue
        m = re.match(r"\s*&(?![&=])\s*" if len(shifts) == 1 and not ands else
                     r"\s*(<<|>>)(?!=)\s*" if len(ands) == 1 and not shifts else
                     r"(?!)", s[e + 1:])
        if not m:
            continue
        q = e + 1 + m.end()
        if s[q:q + 1] == "(":
            r = match_paren(s, q)
            if r is None:
                continue
            r += 1
        else:
            pm = PRIMARY.match(s, q)
            if not pm or pm.end() == q:
                continue
            r = pm.end()
        if not re.match(r"^\s*($|[);,|&^?:])", s[r:]):
            continue
        second = code[q:r].strip()
        if re.match(r"^\s*(0x[0-9a-fA-F]+|\d+)[uUlL]*\s*$",
                    code[p + 1:(shifts or ands)[0]]):
            continue     # (0xff << n) & m: a constant has no bit order to get wrong
        if shifts:       # (x >> s) & m  ->  ((x & m) >> s)
            k = shifts[0]
            x, sh, amount = code[p + 1:k].strip(), code[k:k + 2], code[k + 2:e].strip()
            core = "(%s & %s) %s %s" % (x, second, sh, amount)
            label = "mask before the shift"
        else:            # (x & m) >> s  ->  ((x >> s) & m)
            k = ands[0]
            x, mask_text, sh = code[p + 1:k].strip(), code[k + 1:e].strip(), m.group(1)
            core = "(%s %s %s) & %s" % (x, sh, second, mask_text)
            label = "shift before the mask"
        whole = (before.endswith("(") and s[r:].lstrip().startswith(")")) or \
            ((before.endswith(("=", "return")) or before == "") and
             s[r:].strip() == ";")
        new = code[:p] + (core if whole else "(%s)" % core) + code[r:]
        out.append(("swap-halves", label, new))
    return out


def drop_guard(ctx, i, code):
    """if (cond) with the body run whatever cond says: (cond) || 1 - cond
    still evaluated, so its side effects stay and the names it reads stay
    used (if (1) can leave a variable set but not used). A condition over
    several lines gets ? 1 : 1 on its last line. Left
    out: an if whose body leaves (return, goto, break, continue) - that
    is return-early's and delete-statement's ground."""
    s = ctx.code[i]
    m = IF_AT.match(s)
    if not m:
        return []
    p = m.end() - 1
    e = match_paren(s, p)
    last, cond = i, None
    if e is not None:
        cond = code[p + 1:e]
    else:
        depth, parts = 0, []
        for j in range(i, min(ctx.hi, i + 8)):
            t = ctx.code[j]
            for k in range(p if j == i else 0, len(t)):
                if t[k] == "(":
                    depth += 1
                elif t[k] == ")":
                    depth -= 1
                    if depth == 0:
                        last, e = j, k
                        break
            parts.append(t[p + 1 if j == i else 0:e if e is not None else len(t)])
            if e is not None:
                break
        if e is None:
            return []
        cond = " ".join(parts)
    lt = ctx.code[last]
    rest = lt[e + 1:].strip()
    if cond.strip() in ("0", "1"):
        return []
    if rest == "":
        nb = ctx.next_code(last)
        if nb is None or JUMP.match(ctx.code[nb].strip()) or \
                ctx.code[nb].strip().startswith("{"):
            return []
    elif rest == "{":
        c = ctx.closer(last, lt.rindex("{"))
        if c is None:
            return []
        lb = ctx.prev_code(c)
        if lb is None or JUMP.match(ctx.code[lb].strip()):
            return []
    elif rest.endswith((";", "}")):
        if re.search(r"\b(return|goto|break|continue)\b", rest):
            return []
    else:
        return []
    if last == i:
        new = code[:p + 1] + "(%s) || 1" % cond.strip() + code[e:]
        return [("drop-guard", "if condition always true", new)]
    flat = mask(cond)
    if any(flat[k] in "?," or (flat[k] == "=" and flat[k - 1] not in "=!<>" and
                               flat[k + 1:k + 2] != "=")
           for k in top_level(flat, 0, len(flat))):
        return []
    lcode = ctx.text[last]
    new = lcode[:e] + " ? 1 : 1" + lcode[e:]
    return [("drop-guard@%d" % last, "if condition (lines %d-%d) always true"
             % (i + 1, last + 1), new)]


def swap_remove_skip(ctx, i, code):
    """In a loop that removes element i by moving the last one into its
    place (a[i] = a[--n]; or a[i] = a[n - 1]; n--;): the i-- that has the
    moved element looked at deleted, or - where the loop looks again by
    not advancing - an i++ added, so the moved element is skipped."""
    s = ctx.code[i].strip()
    m = re.match(r"^(.+?)\s*=\s*([\w>.\-\[\]]+?)\[\s*--\s*([\w>.\-]+)\s*\]\s*;$", s) or \
        re.match(r"^(.+?)\s*=\s*([\w>.\-\[\]]+?)\[\s*([\w>.\-]+)\s*-\s*1\s*\]\s*;$", s)
    if not m:
        return []
    lhs, arr, count = m.group(1), m.group(2), m.group(3)
    if "--" not in s:   # a[i] = a[n - 1]; needs n--; next
        nxt = ctx.next_code(i)
        if nxt is None or not re.match(r"^\s*(%s\s*--|--\s*%s|%s\s*-=\s*1)\s*;"
                                       % ((re.escape(count),) * 3), ctx.code[nxt]):
            return []
    idx = re.match(r"^%s\[\s*(\w+)\s*\]$" % re.escape(arr), lhs)
    loop = None
    for h in ctx.enclosing(i):
        hm = re.match(r"^\s*(for|while)\s*\((.*)\)\s*\{?\s*$", ctx.code[h])
        if hm and count in hm.group(2):
            loop = hm
            break
    if loop is None:
        return []
    var = idx.group(1) if idx else None
    if var is None:
        vm = re.search(r"\b(\w+)\s*<=?\s*%s\b" % re.escape(count), loop.group(2))
        if not vm:
            return []
        var = vm.group(1)
    out = []
    j = i
    for _ in range(3):
        j = ctx.next_code(j)
        if j is None or ctx.code[j].strip().startswith("}"):
            break
        if re.match(r"^\s*(%s\s*--|--\s*%s|%s\s*-=\s*1)\s*;$" % ((re.escape(var),) * 3),
                    ctx.code[j]):
            indent = ctx.lines[j][:len(ctx.lines[j]) - len(ctx.lines[j].lstrip())]
            out.append(("swap-remove-skip@%d" % j, "the %s-- after the swap-remove deleted"
                        % var, indent + ";"))
            return out
    step = ""
    if loop.group(1) == "for":
        parts = top_level_split(loop.group(2), ";")
        step = parts[2] if len(parts) == 3 else ""
    if re.search(r"\b%s\b" % re.escape(var), step):
        return []   # the loop advances past the moved element already
    indent = code[:len(code) - len(code.lstrip())]
    out.append(("swap-remove-skip", "%s++ after the swap-remove" % var,
                "%s{ %s %s++; }" % (indent, code.strip(), var)))
    return out


FUNC = re.compile(r"^(?:static\s+|[A-Z0-9]+DEF\s+)[^;=]*?\b(\w+)\s*\(")
SECTION = re.compile(r"^/\* ---- (.+?)(?: -+| \*/|$)")


def functions_and_sections(lines, lo, hi):
    """Per line index in [lo, hi): the enclosing function's name and the
    section ("/* ---- name" comment) it is in."""
    func, sect = {}, {}
    cur_f, cur_s = "(file scope)", "(start)"
    for i in range(lo, hi):
        line = lines[i]
        m = SECTION.match(line)
        if m:
            cur_s = m.group(1).strip().rstrip("-").strip()
        m = FUNC.match(line)
        if m and not line.rstrip().endswith(";"):
            cur_f = m.group(1)
        func[i], sect[i] = cur_f, cur_s
    if all(v == "(start)" for v in sect.values()):   # no sections: by function
        sect = dict(func)
    return func, sect


def spread_sample(cands, func, count, rnd):
    """count candidates, round-robin over the functions (shuffled): every
    function before seconds. A function's own candidates are taken
    round-robin over their families (in a shuffled order, each family's
    candidates shuffled): every family a function has before seconds - a
    rare family (contents-to-length) is not crowded out by the constants."""
    groups = {}
    for c in cands:
        groups.setdefault(func.get(c[0], "?"), {}).setdefault(c[1], []).append(c)
    names = sorted(groups)
    rnd.shuffle(names)
    queue = {}
    for n in names:
        fams = sorted(groups[n])
        rnd.shuffle(fams)
        for f in fams:
            rnd.shuffle(groups[n][f])
        queue[n] = []
        while any(groups[n][f] for f in fams):
            for f in fams:
                if groups[n][f]:
                    queue[n].append(groups[n][f].pop())
        queue[n].reverse()   # (taken from the end)
    out = []
    while len(out) < count and any(queue[n] for n in names):
        for n in names:
            if queue[n] and len(out) < count:
                out.append(queue[n].pop())
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
        # "header [function]: ..." holds in that function only; without
        # the function, wherever the line's text occurs
        m = re.match(r"^(\S+) \[(\w+)\]$", name)
        func = m.group(2) if m else None
        if m:
            name = m.group(1)
        if name == header:
            eq[(func, orig.strip(), new.strip())] = why.strip()
    return eq


def copy_tree(dst):
    def ignore(d, names):
        return [n for n in names if n in SKIP_DIRS and
                (n != "out" or os.path.basename(d) == "fuzz")]
    shutil.copytree(ROOT, dst, ignore=ignore, symlinks=True)


def run(cmd, cwd, timeout, env=None):
    """Runs cmd in its own process group; on timeout the whole group (make
    and the test it runs - a mutant can loop forever) is killed."""
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True,
                         env=dict(os.environ, **env) if env else None)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, "timeout"


RUN_LIMIT = {}   # (target, directory): seconds a mutant's replay may take
ONLY = set()     # --only: the sample's mutants to judge (empty: all)

HEADERS_ALL = ["alkcodec.h", "alksim.h", "alktunnel.h", "qcow2w.h"]

# ---- mutant schemata: many mutants in one build, chosen at run time ----
COND = re.compile(r"^(\s*(?:\} else |\} )?)(if|while) \((.*)\)(\s*\{?|;)$")
FOR = re.compile(r"^(\s*)for \((.*)\)(\s*\{?)$")
INIT = re.compile(r"^(\s*[^=;()]*[^=!<>+\-*/%&|^ ])\s*=(?!=)\s*(.*);$")
SCHEMA_NO_ERROR = " ".join("-Wno-error=" + w for w in (
    "maybe-uninitialized", "uninitialized", "stringop-overflow", "stringop-overread",
    "array-bounds", "restrict"))
SCHEMA_HELPER = [
    "#include <stdlib.h> /* mutants.py: the mutant to run, from ALK_MUTANT */",
    "static int alk__mut_id = -2;",
    "static int alk__mut(void) { if (alk__mut_id == -2) { const char *e_ = "
    "getenv(\"ALK_MUTANT\"); alk__mut_id = e_ ? atoi(e_) : -1; } "
    "return alk__mut_id; }",
]


# any "type name ..." line: two words (or a word and a pointer) before the
# name's = ; , or [ - goto label; is one too, and is left alone
ANY_DECL = re.compile(r"^\s*(?:const\s+|static\s+|struct\s+|unsigned\s+)*[A-Za-z_]\w*"
                      r"(?:\s+|\s*\*+\s*)[A-Za-z_]\w*\s*(?:\[|=|;|,)")


def full_statement(code):
    """A line that is one whole statement (what can sit in braces)."""
    s = code.strip()
    return (s.endswith(";") and s.count("(") == s.count(")") and not DECL.match(code)
            and not ANY_DECL.match(code)
            and not s.startswith(("}", "{", "case", "default", "else"))
            and not code.rstrip().endswith(("(", ",")))


def top_level_split(text, sep):
    """text split at each sep outside parentheses and brackets."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


def switched(muts, parts_of, k, original):
    """The k-th part of the line as a chain of alk__mut() == n ? (part) :,
    the original part last; None when a mutant's line has another shape."""
    chain = ""
    for n, new in muts:
        parts = parts_of(new)
        if parts is None:
            return None
        if parts[k] != original:
            chain += "alk__mut() == %d ? (%s) : " % (n, parts[k])
    return "%s(%s)" % (chain, original) if chain else original


def cond_shape(line):
    """COND's match when the condition's parentheses are the line's last
    ones (not the if (c) x = f(y); of a one-line if: that is a statement)."""
    m = COND.match(line)
    if m:
        flat = mask(line)
        if match_paren(flat, m.start(3) - 1) != m.end(3):
            return None
    return m


def schema_line(code, muts):
    """The line holding its mutants [(n, new line)] behind alk__mut() == n,
    the original otherwise; None when the line's shape does not allow it
    (those mutants are built one by one)."""
    indent = code[:len(code) - len(code.lstrip())]
    m = FOR.match(code)
    if m:   # for (a; b; c): each part a mutant changes, switched
        def parts_of(line):
            mm = FOR.match(line)
            if not mm or mm.group(3) != m.group(3):
                return None
            p = top_level_split(mm.group(2), ";")
            return p if len(p) == 3 else None
        orig = parts_of(code)
        if orig is None or any(parts_of(new) is None for _, new in muts):
            return None
        if any(parts_of(new)[0] != orig[0] for _, new in muts) and \
                DECL.match(orig[0]):
            return None   # a declaration is no expression to switch
        parts = [switched(muts, parts_of, k, orig[k]) for k in range(3)]
        return "%sfor (%s;%s;%s)%s" % (indent, parts[0], parts[1], parts[2], m.group(3))
    m = cond_shape(code)
    if m:
        chain = ""
        for n, new in muts:
            mm = cond_shape(new)
            if not mm or mm.group(1) != m.group(1) or mm.group(2) != m.group(2) or \
                    mm.group(4) != m.group(4):
                return None
            chain += "alk__mut() == %d ? !!(%s) : " % (n, mm.group(3))
        # (!! makes every arm an int: if (p) with p a pointer beside a
        # mutant's if (1) or if (!(p)) is no pointer/integer mismatch)
        return "%s%s (%s!!(%s))%s" % (m.group(1), m.group(2), chain, m.group(3), m.group(4))
    if full_statement(code):
        chain = "".join("if (alk__mut() == %d) { %s } else " % (n, new.strip())
                        for n, new in muts)
        return "%s{ %s{ %s } }" % (indent, chain, code.strip())
    m = INIT.match(code)
    if m and (DECL.match(code) or ANY_DECL.match(code)) and \
            not re.match(r"^\s*(const\s+)?static\b", code):   # (a static's is constant)   # T x = e;: the initializer switched
        def parts_of(line):
            mm = INIT.match(line)
            if not mm or mm.group(1) != m.group(1) or \
                    len(top_level_split(mm.group(2), ",")) != 1:
                return None
            return [mm.group(2)]
        if parts_of(code) is None or any(parts_of(new) is None for _, new in muts):
            return None
        return "%s = %s;" % (m.group(1), switched(muts, parts_of, 0, m.group(2)))
    return None


def function_extents(lines, lo, hi):
    """The functions defined in [lo, hi): {first line: (name, last line,
    (line, column) just after the body's opening brace, void?, argument
    names or None)}. House style: the closing brace alone at column 0, or
    the whole body on the signature's last line."""
    funcs = {}
    i = lo
    while i < hi:
        m = FUNC.match(lines[i])
        if not m or lines[i].rstrip().endswith(";"):
            i += 1
            continue
        name, depth, params, j, col, body = m.group(1), 0, "", i, None, None
        k = lines[i].index(name) + len(name)
        while j < hi and body is None:
            text = lines[j]
            while k < len(text):
                ch = text[k]
                if ch == "(":
                    depth += 1
                    if depth == 1:
                        k += 1
                        continue
                elif ch == ")":
                    depth -= 1
                    if depth == 0:
                        col = k
                        k += 1
                        continue
                elif ch == ";" and col is not None:
                    break            # a prototype
                elif ch == "{" and col is not None and depth == 0:
                    body = (j, k + 1)
                    break
                if depth >= 1 and col is None:
                    params += ch
                k += 1
            if body is None and k < len(text) and text[k] == ";":
                break
            if body is None:
                params += " "
                j, k = j + 1, 0
        if body is None:
            i += 1
            continue
        bj = body[0]
        if lines[bj].rstrip().endswith("}") and lines[bj].count("{") == \
                lines[bj].count("}"):
            end = bj
        else:
            end = next((e for e in range(bj + 1, hi) if lines[e].rstrip() == "}"), None)
        if end is None:
            i += 1
            continue
        args = []
        for prm in top_level_split(params, ","):
            prm = prm.strip()
            fp = re.search(r"\(\s*\*\s*(\w+)\s*\)", prm)
            name_m = fp or re.search(r"(\w+)\s*(\[[^\]]*\]\s*)*$", prm)
            if prm == "..." or not name_m:
                args = None
                break
            if prm != "void":
                args.append(name_m.group(1))
        head = lines[i][:lines[i].index(name)]
        void = re.search(r"\bvoid\s*$", head) is not None
        # an attribute on the line above (a target("avx2") function) is
        # part of the definition: its copies carry it, and go above it
        first = i - 1 if i > lo and lines[i - 1].startswith("__attribute__") else i
        funcs[i] = (name, end, body, void, args, first)
        i = end + 1
    return funcs


def statement_start(lines, idx):
    """Whether line idx starts a statement: the code line before it ends
    one (or opens a block, or is a label, an if's condition or an else) -
    not the continuation of a statement that began higher up."""
    j = idx - 1
    while j >= 0:
        code = line_code(lines[j])
        if code is not None and code.strip():
            break
        j -= 1
    if j < 0:
        return True
    prev = code.rstrip()
    if prev.endswith("\\") or re.search(r"=\s*\{$", prev):
        return False   # a macro's body, an initialiser's list
    if prev.endswith(")"):   # only an if/while/for condition's end
        return re.match(r"^\s*(\} else if|else if|if|while|for)\b", prev) is not None
    return prev.endswith((";", "{", "}", ":")) or prev.endswith("else")


def schematize(lines, lo, chosen, skip, hi=None):
    """The header with every chosen mutant (numbered from 1) that its line's
    shape allows, each behind alk__mut() == n, except those in skip:
    (lines, {n: 1-based line of the schema file}, {n: (first, last) 1-based
    lines the mutant alone occupies}). A mutant whose line has no switchable
    shape (a continuation line, a compound one-liner, an array size) gets
    a copy of its whole function with the mutation, named <function>__mut<n>,
    and the function starts with: if (alk__mut() == n) return the copy."""
    hi = len(lines) if hi is None else hi
    by_line = {}
    for n, (i, _, _, new) in enumerate(chosen, 1):
        if n not in skip:
            by_line.setdefault(i, []).append((n, new))
    # the line schemata first; what they cannot hold goes to function copies
    texts, copies = {}, {}
    funcs = function_extents(lines, lo, hi)
    owner = {}
    for start, (name, end, body, void, args, first) in funcs.items():
        for x in range(start, end + 1):
            owner[x] = start
    for idx, muts in by_line.items():
        code = line_code(lines[idx])
        f = owner.get(idx)
        inside = f is not None and idx > funcs[f][2][0]
        text = schema_line(code, muts) if code and inside and \
            statement_start(lines, idx) else None
        if text is not None:
            texts[idx] = (text, [n for n, _ in muts])
            continue
        if f is None or funcs[f][4] is None:
            continue
        for n, new in muts:
            copies.setdefault(f, []).append((n, idx, new))
    for f in [f for f in copies if funcs[f][2][0] in texts]:
        del copies[f]   # (the brace's line is switched too: built alone)
    out, where, span = [], {}, {}
    copy_at = {funcs[f][5]: f for f in copies}
    for idx, line in enumerate(lines):
        if idx == lo:
            out.extend(SCHEMA_HELPER)
        if idx in copy_at:
            f = copy_at[idx]
            name, end, body, void, args, top = funcs[f]
            for n, at, new in copies[f]:
                first = len(out) + 1
                fn = list(lines[top:end + 1])
                fn[at - top] = new
                head = re.sub(r"^[A-Z0-9]+DEF\b", "static", fn[f - top])
                fn[f - top] = re.sub(r"\b%s(\s*\()" % name, name + "__mut%d\\1" % n,
                                     head, 1)
                out.extend(fn)
                where[n] = first + (at - top)
                span[n] = (first, len(out))
        if idx in texts:
            line = texts[idx][0]
            for n in texts[idx][1]:
                where[n] = len(out) + 1
        for start in copies:
            name, end, body, void, args, top = funcs[start]
            if body[0] == idx:
                call = ", ".join(args)
                disp = "".join(
                    (" if (alk__mut() == %d) { %s__mut%d(%s); return; }" if void else
                     " if (alk__mut() == %d) return %s__mut%d(%s);")
                    % (n, name, n, call) for n, _, _ in copies[start])
                line = line[:body[1]] + disp + line[body[1]:]
        out.append(line)
    return out, where, span


def judging_targets(header):
    """The fuzz targets whose harness names the header directly or through
    local includes (followed two levels deep)."""
    fuzz = os.path.join(ROOT, "fuzz")
    targets = []

    def mentions(path, depth):
        text = open(path, encoding="utf-8").read()
        if header in text:
            return True
        if depth == 0:
            return False
        for inc in re.findall(r'#include "([^"]+)"', text):
            sub = os.path.normpath(os.path.join(os.path.dirname(path), inc))
            # (the headers under test are not followed: alktunnel.h naming
            # alkcodec.h in a comment does not make its harnesses judges)
            if os.path.dirname(sub) == ROOT:
                continue
            if os.path.exists(sub) and mentions(sub, depth - 1):
                return True
        return False

    for name in sorted(os.listdir(fuzz)):
        if not name.endswith(".c"):
            continue
        path = os.path.join(fuzz, name)
        if "LLVMFuzzerTestOneInput" not in open(path, encoding="utf-8").read():
            continue
        if mentions(path, 2):
            targets.append(name[:-2])
    return targets


def select(header, args):
    macro = os.path.basename(header)[:-2].upper() + "_IMPLEMENTATION"
    lines = open(os.path.join(ROOT, header), encoding="utf-8").read().split("\n")
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
    cands = [c for c in cands if c[1] in args.families]
    func, sect = functions_and_sections(lines, lo, hi)
    chosen = spread_sample(cands, func, args.count, random.Random(args.seed))
    return lines, lo, hi, cands, chosen, func, sect


def run_header(header, args, tree):
    """Runs the sample of one header in the scratch tree; returns its
    record: counts, per-section counts, survivors."""
    lines, lo, hi, cands, chosen, func, sect = select(header, args)
    print("mutants: %s: %d candidate mutations in lines %d-%d (%d functions), "
          "running %d (seed %d, gate %s)"
          % (header, len(cands), lo + 1, hi, len(set(func[c[0]] for c in cands)),
             len(chosen), args.seed, args.gate), flush=True)
    per_family = {}
    for c in cands:
        per_family[c[1]] = per_family.get(c[1], 0) + 1
    for kind, fams in (("operator", OPERATOR_FAMILIES), ("semantic", SEMANTIC_FAMILIES)):
        if any(f in args.families for f in fams):
            print("mutants: %s: %s candidates: %s" % (header, kind, ", ".join(
                "%s %d" % (f, per_family.get(f, 0)) for f in fams if f in args.families)))
    judged = len(ONLY) if ONLY else len(chosen)   # (--only: those of the sample)
    rec = {"header": header, "killed": 0, "survived": [], "equivalent": [],
           "nobuild": 0, "sections": {}, "run": judged, "families": {}}
    if args.list:
        for i, family, label, new in chosen:
            print("  %s:%d  [%s]  %s (%s): %s" % (header, i + 1, func[i], family, label,
                                                 new.strip()))
        return rec
    equivalents = load_equivalents(header)
    target = os.path.join(tree, header)
    base = os.path.basename(header)[:-2]
    fuzz_targets = judging_targets(header)
    scope = ["B=build-mutant", "FUZZ_TARGETS=" + " ".join(fuzz_targets)]
    runs = []
    if args.gate == "replay":
        scope.append("UNIT_TESTS=")
        gate = ["make", "-s", "replay"] + scope
        build = ["make", "-s", "-j2"] + scope + \
            ["build-mutant/replay_%s" % t for t in fuzz_targets]
        rc, out = run(["make", "-s", "replay-runs"] + scope, tree, args.timeout)
        runs = [r.split(":", 1) for r in out.split()] if rc == 0 else []
        print("mutants: judged by the corpora of: %s (replay only)"
              % (" ".join(fuzz_targets) or "(none)"))
    else:
        scope.append("UNIT_TESTS=" + base)
        gate = ["make", "-s", "fast-gate"] + scope
        build = ["make", "-s", "-j2", "all"] + scope
        print("mutants: judged by tests/test_%s.c and the corpora of: %s"
              % (base, " ".join(fuzz_targets) or "(none)"))
    original = "\n".join(lines)
    with open(target, "w", encoding="utf-8") as f:
        f.write(original)
    rc, out = run(build, tree, args.timeout)
    if rc != 0:
        print(out[-3000:])
        sys.exit("mutants: the unmutated tree does not build")
    t_gate = time.time()
    rc, out = run(gate, tree, args.timeout)
    if rc != 0:
        print(out[-3000:])
        sys.exit("mutants: the unmutated tree fails the %s gate" % args.gate)
    # A mutant that loops forever is killed after ten times the clean gate.
    limit = min(args.timeout, max(30, int(10 * (time.time() - t_gate))))
    print("mutants: clean gate %.1f s; per-mutant limit %d s"
          % (time.time() - t_gate, limit), flush=True)
    if runs:
        # The replay gate, run by run: the quickest runs (build + replay,
        # timed on the clean tree) first, stopping at the first that fails
        # - a killed mutant costs one or two builds, not all of them.
        timed = []
        for t, d in runs:
            rc1, _ = run(["make", "-s"] + scope + ["build-mutant/replay_%s" % t],
                         tree, args.timeout)
            t0 = time.time()
            rc2, _ = run(["./build-mutant/replay_%s" % t, "-q", d], tree, args.timeout)
            if rc1 != 0 or rc2 != 0:
                sys.exit("mutants: the unmutated tree fails replay_%s %s" % (t, d))
            timed.append((time.time() - t0, t, d))
            # a mutant that loops is stopped after ten times the clean run
            RUN_LIMIT[(t, d)] = max(15, int(10 * (time.time() - t0)))
        runs = [(t, d) for _, t, d in sorted(timed)]
        print("mutants: replay runs, quickest first: %s"
              % " ".join("%s:%s" % r for r in runs), flush=True)
    t0 = time.time()
    schema = set()
    if runs and not args.no_schemata:
        # every binary a run uses (the portable builds too)
        # (the optimiser's flow warnings - "may be used uninitialized" when
        # a switched statement might not run - are not errors there: a
        # schema mutant that alone would fail only on one is judged)
        build_runs = ["make", "-s", "-j2", "CPPFLAGS=" + SCHEMA_NO_ERROR] + scope + sorted(
            set("build-mutant/replay_%s" % t for t, _ in runs))
        schema = build_schemata(lines, lo, hi, chosen, target, build_runs, tree,
                                args.timeout, runs, scope, limit)
        print("mutants: %d of %d in one build (schemata), %d built one by one"
              % (len(schema), judged, judged - len(schema)), flush=True)
    order = [n for n in range(1, len(chosen) + 1) if n in schema] + \
            [n for n in range(1, len(chosen) + 1) if n not in schema]
    if ONLY:
        order = [n for n in order if n in ONLY]
    try:
        for n in order:
            i, family, label, new = chosen[n - 1]
            if n not in schema:
                mutated = list(lines)
                mutated[i] = new
                with open(target, "w", encoding="utf-8") as f:
                    f.write("\n".join(mutated))
            desc = "%s:%d  [%s]  %s (%s): %s" % (header, i + 1, func[i], family, label,
                                                new.strip())
            group = rec["sections"].setdefault(sect[i], [0, 0])
            # killed, survived, equivalent, did not build
            fam = rec["families"].setdefault(family, [0, 0, 0, 0])
            if runs:
                if n in schema:
                    rc, out, at = judge_by_runs(runs, scope, tree, args.timeout, limit,
                                                env={"ALK_MUTANT": str(n)}, build=False)
                else:
                    rc, out, at = judge_by_runs(runs, scope, tree, args.timeout, limit)
                if rc == "gate-fail" and at:
                    # the run that killed this mutant goes first for the
                    # next: neighbouring mutants tend to fall to the same
                    runs.insert(0, runs.pop(at))
            else:
                rc, out = run(build, tree, args.timeout)
                if rc == 0:
                    rc, out = run(gate, tree, limit)
                    rc = "gate-pass" if rc == 0 else ("gate-timeout" if rc is None else "gate-fail")
            if rc is None:
                verdict = "killed (build/test timeout)"
                rec["killed"] += 1
                group[0] += 1
                group[1] += 1
                fam[0] += 1
            elif rc not in ("gate-pass", "gate-fail", "gate-timeout"):
                verdict = "did not build"
                rec["nobuild"] += 1
                fam[3] += 1
            else:
                if rc == "gate-pass":
                    key = (line_code(lines[i]).strip(), new.strip())
                    keys = [key]
                    if new.strip() == "if (0) " + key[0]:
                        keys.append((key[0], ";"))   # a deletion may be listed as "=> ;"
                    why = next((equivalents[(f,) + k] for k in keys for f in (func[i], None)
                                if (f,) + k in equivalents), None)
                    if why is not None:
                        verdict = "survived: documented equivalent"
                        rec["equivalent"].append("%s  (%s)" % (desc, why))
                        fam[2] += 1
                    else:
                        verdict = "SURVIVED"
                        rec["survived"].append(desc)
                        group[1] += 1
                        fam[1] += 1
                else:
                    verdict = "killed" if rc == "gate-fail" else "killed (timeout)"
                    rec["killed"] += 1
                    group[0] += 1
                    group[1] += 1
                    fam[0] += 1
            print("[%2d/%d] %-30s %s" % (n, len(chosen), verdict, desc), flush=True)
    finally:
        with open(target, "w", encoding="utf-8") as f:
            f.write(original)
    rec["seconds"] = time.time() - t0
    return rec


def syntax_commands(build, tree, timeout):
    """The compile commands of the build, made syntax checks (-fsyntax-only,
    no output): a few seconds where the real build takes minutes."""
    rc, out = run(["make", "-n", "-B"] + build[1:], tree, timeout)
    if rc != 0:
        return []
    cmds = []
    for cmd in out.replace("\\\n", " ").split("\n"):
        if re.search(r"-o build-mutant/\S+", cmd) and re.search(r"\.c\b", cmd):
            cmds.append(re.sub(r"-o build-mutant/\S+", "-fsyntax-only", cmd))
    return cmds


def schema_errors(log, base, where, span):
    """The mutants a build log's errors name: (on their lines, within 60
    lines of one - a warning a switched line causes elsewhere, "may be used
    uninitialized", names another line of the function)."""
    bad, near = set(), set()
    # (an error in a system header - an intrinsic inlined into a function
    # of another target - names the header's line in a "called from" note)
    for m in re.finditer(r"%s:(\d+):\d+: (?:error|note: called from here)" % base, log):
        at = int(m.group(1))
        bad |= {n for n, w in where.items() if w == at}
        bad |= {n for n, (a, b) in span.items() if a <= at <= b}
        near |= {n for n, w in where.items() if abs(w - at) <= 60}
    return bad, near


def build_schemata(lines, lo, hi, chosen, target, build, tree, timeout, runs, scope,
                   limit):
    """Writes the header with every mutant its line's shape allows behind a
    run-time switch and builds the judging binaries once; a mutant whose
    line then does not compile goes back to being built alone. Returns the
    numbers of the mutants the build holds (empty when it cannot be made,
    or when with no mutant chosen it fails the gate). The compile errors
    are found first by syntax checks of every binary's sources, then by
    the build itself (the warnings only the optimiser sees)."""
    skip = set(range(1, len(chosen) + 1)) - ONLY if ONLY else set()
    base = re.escape(os.path.basename(target))
    checks = syntax_commands(build, tree, timeout)
    for rounds, check in ((60, True), (25, False)):
        for _ in range(rounds):
            out, where, span = schematize(lines, lo, chosen, skip, hi)
            if not where:
                return set()
            with open(target, "w", encoding="utf-8") as f:
                f.write("\n".join(out))
            if check:
                rc, log = 0, ""
                for cmd in checks:
                    r, o = run(["sh", "-c", cmd], tree, timeout)
                    if r != 0:
                        rc, log = r if r is not None else 1, log + o
            else:
                rc, log = run(build, tree, timeout)
            if rc == 0:
                break
            if rc is None:
                return set()
            bad, near = schema_errors(log, base, where, span)
            if not bad:
                bad = near
            if not bad:
                print("mutants: schemata: an error near no mutant's line:\n%s" % log[-2000:])
                return set()
            skip |= bad
        else:
            return set()
    left = skip - (set(range(1, len(chosen) + 1)) - ONLY) if ONLY else skip
    print("mutants: schemata: %d mutants left out (their switched line or copy "
          "does not compile)" % len(left), flush=True)
    rc, _, _ = judge_by_runs(runs, scope, tree, timeout, limit, build=False)
    if rc != "gate-pass":
        print("mutants: schemata: with no mutant chosen the build fails the gate")
        return set()
    return set(where)


def judge_by_runs(runs, scope, tree, timeout, limit, env=None, build=True):
    """The replay gate one run at a time, stopping at the first failure:
    (verdict, output, index of the run it stopped at), the verdict None (a
    build timed out), a build's failing exit code, or "gate-pass",
    "gate-fail" or "gate-timeout". build=False: the binaries are built
    (the schemata), env picks the mutant."""
    built = set()
    for at, (t, d) in enumerate(runs):
        if build and t not in built:
            rc, out = run(["make", "-s"] + scope + ["build-mutant/replay_%s" % t], tree, timeout)
            if rc is None:
                return None, out, at
            if rc != 0:
                return rc, out, at
            built.add(t)
        rc, out = run(["./build-mutant/replay_%s" % t, "-q", "-x", d], tree,
                      min(limit, RUN_LIMIT.get((t, d), limit)), env)
        if rc is None:
            return "gate-timeout", "replay_%s %s: timeout" % (t, d), at
        if rc != 0:
            return "gate-fail", "replay_%s %s failed" % (t, d), at
    return "gate-pass", "", len(runs)


def rate(rec):
    judged = rec["killed"] + len(rec["survived"])
    return (100.0 * rec["killed"] / judged if judged else 100.0), judged


def kind_counts(rec, families):
    """killed, survived, equivalent, did not build over those families."""
    out = [0, 0, 0, 0]
    for f in families:
        for k, v in enumerate(rec["families"].get(f, (0, 0, 0, 0))):
            out[k] += v
    return out


def families_token(args):
    """' families=...' for a run restricted to some families ('' for all)."""
    fams = set(args.families)
    if fams == set(OPERATOR_FAMILIES + SEMANTIC_FAMILIES):
        return ""
    for name, group in (("operator", OPERATOR_FAMILIES), ("semantic", SEMANTIC_FAMILIES)):
        if fams == set(group):
            return " families=" + name
    return " families=" + ",".join(f for f in OPERATOR_FAMILIES + SEMANTIC_FAMILIES
                                   if f in fams)


def baseline_line(rec, args, kind=""):
    """The header's line; kind "semantic": the semantic families' line."""
    if kind:
        killed, survived, equivalent, nobuild = kind_counts(rec, SEMANTIC_FAMILIES)
    else:
        killed, survived = rec["killed"], len(rec["survived"])
        equivalent, nobuild = len(rec["equivalent"]), rec["nobuild"]
    judged = killed + survived
    pct = 100.0 * killed / judged if judged else 100.0
    return ("%s gate=%s seed=%d count=%d%s%s: %.1f%% killed (%d of %d judged; "
            "%d equivalent, %d did not build)"
            % (rec["header"], args.gate, args.seed, args.count, families_token(args),
               " " + kind if kind else "", pct, killed, judged, equivalent, nobuild))


def has_semantic(args):
    return any(f in args.families for f in SEMANTIC_FAMILIES)


def report(recs, args):
    print()
    for rec in recs:
        pct, judged = rate(rec)
        print("mutants: %s: %d run in %.0f s: %d killed, %d survived, %d equivalent "
              "(documented), %d did not build; kill rate %.1f%% of %d judged"
              % (rec["header"], rec["run"], rec.get("seconds", 0), rec["killed"],
                 len(rec["survived"]), len(rec["equivalent"]), rec["nobuild"], pct,
                 judged))
        for name, (k, j) in sorted(rec["sections"].items()):
            if j:
                print("    %-58s %3d/%-3d killed (%.0f%%)" % (name[:58], k, j, 100.0 * k / j))
        print("    %-30s %s" % ("family", "killed/judged  equivalent  did not build"))
        for kind, fams in (("operator", OPERATOR_FAMILIES), ("semantic", SEMANTIC_FAMILIES)):
            if not any(f in args.families for f in fams):
                continue
            for f in fams + [kind]:
                if f not in args.families and f != kind:
                    continue
                k, sv, eq, nb = kind_counts(rec, fams if f == kind else [f])
                j = k + sv
                print("    %-30s %3d/%-3d %s  %3d  %3d"
                      % ("%s %s" % (kind, f) if f != kind else "%s (all)" % kind,
                         k, j, ("(%3.0f%%)" % (100.0 * k / j)) if j else "(  -  )", eq, nb))
        for x in rec["survived"]:
            print("  SURVIVOR %s" % x)
        for x in rec["equivalent"]:
            print("  equivalent %s" % x)
    for rec in recs:
        if has_semantic(args):   # killed of the non-equivalent mutants that built
            print("mutants: %s" % baseline_line(rec, args, "semantic"))


def write_baseline(recs, args):
    with open(args.write_baseline, "w", encoding="utf-8") as f:
        f.write("# mutants_baseline.txt - kill rates of `make mutants` samples, one line\n"
                "# per header, gate, seed and count (tests/mutants.py --write-baseline)\n"
                "# and a 'semantic' line: the semantic families' mutants of the sample.\n"
                "# A run with --baseline fails when a header's rate is below its line.\n")
        for rec in recs:
            f.write(baseline_line(rec, args) + "\n")
            if has_semantic(args):
                f.write(baseline_line(rec, args, "semantic") + "\n")


BASELINE = re.compile(r"^(\S+) gate=(\S+) seed=(\d+) count=(\d+)( families=\S+)?"
                      r"( semantic)?: ([\d.]+)% killed")


def check_baseline(recs, args):
    """0 if no header's kill rate is below its baseline line (same gate,
    seed, count and families), nor its semantic families' rate below its
    semantic line where the file has one."""
    want = {}
    for raw in open(args.baseline, encoding="utf-8"):
        m = BASELINE.match(raw)
        if m:
            want[(m.group(1), m.group(2), int(m.group(3)), int(m.group(4)),
                  m.group(5) or "", (m.group(6) or "").strip())] = float(m.group(7))
    bad = 0
    for rec in recs:
        for kind in ("", "semantic") if has_semantic(args) else ("",):
            key = (rec["header"], args.gate, args.seed, args.count, families_token(args),
                   kind)
            if key not in want:
                if not kind:
                    print("mutants: baseline: no line for %s gate=%s seed=%d count=%d%s"
                          % key[:5])
                continue
            if kind:
                k, sv = kind_counts(rec, SEMANTIC_FAMILIES)[:2]
                pct = 100.0 * k / (k + sv) if k + sv else 100.0
            else:
                pct, _ = rate(rec)
            verdict = "ok" if pct + 1e-9 >= want[key] else "DROPPED"
            print("mutants: baseline: %s%s %.1f%% (baseline %.1f%%): %s"
                  % (rec["header"], " " + kind if kind else "", pct, want[key], verdict))
            bad |= verdict != "ok"
    return bad


def parse_families(text):
    """--families: names and the groups 'operator', 'semantic', 'all'."""
    out = []
    for name in (x.strip() for x in text.split(",")):
        group = {"all": OPERATOR_FAMILIES + SEMANTIC_FAMILIES,
                 "operator": OPERATOR_FAMILIES,
                 "semantic": SEMANTIC_FAMILIES}.get(name)
        if group is None and name not in OPERATOR_FAMILIES + SEMANTIC_FAMILIES:
            sys.exit("mutants: --families: no family %r (operator: %s; semantic: %s)"
                     % (name, " ".join(OPERATOR_FAMILIES), " ".join(SEMANTIC_FAMILIES)))
        out += group or [name]
    return [f for f in OPERATOR_FAMILIES + SEMANTIC_FAMILIES if f in out]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--header", default="alkcodec.h",
                    help="a header, or 'all' for the four")
    ap.add_argument("--count", type=int, default=60, help="mutants per header")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gate", choices=("fast", "replay"), default="fast",
                    help="fast: unit tests + corpus replay; replay: the corpus "
                         "replay alone")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--no-schemata", action="store_true",
                    help="--gate replay: build every mutant alone (slower; the "
                         "schemata build them all into one binary per target)")
    ap.add_argument("--only", default=None, metavar="N,N,...",
                    help="judge only these mutants of the sample (the numbers "
                         "a run printed: re-judging its survivors)")
    ap.add_argument("--list", action="store_true",
                    help="list the selected mutants without running them")
    ap.add_argument("--since", default=None,
                    help="only lines added or changed since this git revision")
    ap.add_argument("--between", nargs=2, default=None, metavar=("START", "END"),
                    help="only lines from the first holding START to the next "
                         "holding END")
    ap.add_argument("--baseline", default=None,
                    help="fail if a kill rate is below this file's line")
    ap.add_argument("--write-baseline", default=None,
                    help="write the per-header kill rates to this file")
    ap.add_argument("--families", default="all", metavar="F,F,...",
                    help="only these mutation families: names, or 'operator', "
                         "'semantic', 'all' (the default)")
    args = ap.parse_args()
    args.families = parse_families(args.families)
    if args.only:
        ONLY.update(int(x) for x in args.only.split(",") if x.strip())
    headers = HEADERS_ALL if args.header == "all" else [args.header]
    headers = [h for h in headers if os.path.exists(os.path.join(ROOT, h))]

    scratch = tempfile.mkdtemp(prefix="alk-mutants-")
    tree = os.path.join(scratch, "tree")
    recs = []
    try:
        if not args.list:
            copy_tree(tree)
        for h in headers:
            recs.append(run_header(h, args, tree))
            if args.write_baseline and not args.list:   # after each header
                write_baseline(recs, args)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.list:
        return 0
    report(recs, args)
    rc = 1 if any(r["survived"] for r in recs) else 0
    if args.write_baseline:
        print("mutants: wrote %s" % args.write_baseline)
    if args.baseline:
        rc |= check_baseline(recs, args)
    return rc


if __name__ == "__main__":
    sys.exit(main())
