#!/bin/sh
# Demo of params_check: valid documents come back in canonical form (and the
# canonical form is a fixed point); broken ones are refused with the line,
# column, byte offset and field path of the problem.
set -eu
B=${B:-build}
bin="$B/params_check"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

printf '{ "port": 5432,\n  "host": "DB.internal.example",\n  "substrate": "tcp" }\n' \
    > "$tmp/open.json"
"$bin" open "$tmp/open.json" | tee "$tmp/canon.json"
"$bin" open "$tmp/canon.json" | cmp - "$tmp/canon.json"
echo "canonical form is a fixed point"

printf '{"address":"2001:0db8:0000:0000:0000:0000:0000:0001","port":40000}' |
    "$bin" reply

cat > "$tmp/control.json" <<'JSON'
{
  "resources": [
    {"id": "web", "cidr": "10.0.0.0/8", "gateway": "gw-1",
     "ports": [{"from": 80, "to": 80}, {"from": 443, "to": 443}]},
    {"id": "db", "cidr": "10.9.0.0/16", "gateway": "gw-1",
     "protocols": ["tcp"],
     "ports": [{"from": 5432, "to": 5431}]}
  ]
}
JSON
if "$bin" control "$tmp/control.json" 2> "$tmp/err.txt"; then
    echo "expected a refusal"; exit 1
fi
cat "$tmp/err.txt"
grep -q ':7:37: range with from > to (offset 267, field resources\[1\].ports\[0\].to)' \
    "$tmp/err.txt"

printf '{"listen": 0, "substrate": "tcp"}' > "$tmp/listen0.json"
if "$bin" open "$tmp/listen0.json" 2> "$tmp/err.txt"; then
    echo "expected a refusal"; exit 1
fi
cat "$tmp/err.txt"
grep -q 'number out of range (offset 11, field listen)' "$tmp/err.txt"
echo "params_check demo: ok"
