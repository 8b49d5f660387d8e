#!/usr/bin/env python3
"""json_qemu.py QCOW2W IMAGE... - `qcow2w info/check --output=json` against
qemu-img's on the same images: every key both print (nested keys by path,
snapshots by index) must have the same value, and check's exit status must
be qemu-img check's. An image qemu-img cannot open (a backing file that is
not there, a structure it refuses) is skipped and counted. Prints one line
per difference and "json_qemu: N passed, F failed" (a comparison of one
command on one image is one test)."""
import json
import subprocess
import sys


def flat(v, path="", out=None):
    out = {} if out is None else out
    if isinstance(v, dict):
        for k, x in v.items():
            flat(x, path + "." + k if path else k, out)
    elif isinstance(v, list):
        out[path + ".#"] = len(v)
        for i, x in enumerate(v):
            flat(x, "%s[%d]" % (path, i), out)
    else:
        out[path] = v
    return out


def run(argv):
    p = subprocess.run(argv, capture_output=True)
    try:
        return p.returncode, json.loads(p.stdout.decode("utf-8", "replace")), p.stderr
    except ValueError:
        return p.returncode, None, p.stderr


# What qcow2w refuses with a documented code (extended L2 entries, a
# snapshot id past 63 bytes): counted apart, not compared.
REFUSED = (b"unsupported feature", b"format limit would be exceeded")


def main():
    tool, images = sys.argv[1], sys.argv[2:]
    passed = failed = skipped = refused = keys = 0
    for img in images:
        for cmd in ("info", "check"):
            qrc, q, _ = run(["qemu-img", cmd, "--output=json", "-f", "qcow2", img])
            if q is None:
                skipped += 1
                continue
            orc, o, err = run([tool, cmd, "--output=json", img])
            if o is None and orc == 1 and any(r in err for r in REFUSED):
                refused += 1
                continue
            bad = []
            if o is None:
                bad.append("no JSON from qcow2w (exit %d)" % orc)
            else:
                fq, fo = flat(q), flat(o)
                common = sorted(set(fq) & set(fo))
                keys += len(common)
                bad += ["%s: qemu %r, qcow2w %r" % (k, fq[k], fo[k])
                        for k in common if fq[k] != fo[k]]
                if cmd == "check" and qrc != orc:
                    bad.append("exit status: qemu %d, qcow2w %d" % (qrc, orc))
                if cmd == "info" and orc != 0:
                    bad.append("exit status %d" % orc)
            if bad:
                failed += 1
                for b in bad:
                    print("json_qemu: %s %s: %s" % (cmd, img, b))
            else:
                passed += 1
    print("gate: %d images, %d comparisons, %d common values compared, "
          "%d skipped (qemu-img could not open the image), %d refused by "
          "qcow2w as documented" % (len(images), passed + failed, keys, skipped,
                                    refused))
    print("json_qemu: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
