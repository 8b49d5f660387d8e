# qemu_dir.sh - sourced by the scripts that judge images with qemu-img.
# qemu_dir NAME: without qemu-img, say "NAME: SKIPPED" and exit 0; else
# make $dir, a directory removed at exit.
qemu_dir() {
    if ! command -v qemu-img >/dev/null 2>&1; then
        echo "$1: SKIPPED (no qemu-img)"; exit 0
    fi
    dir=$(mktemp -d "/tmp/alk-$1.XXXXXX") || exit 1
    trap 'rm -rf "$dir"' EXIT
}

# qio IMG CMD...: qemu-io -f qcow2 on IMG, one -c for each CMD, quiet.
qio() {
    f=$1; shift
    for c in "$@"; do set -- "$@" -c "$c"; shift; done
    qemu-io -f qcow2 "$@" "$f" >/dev/null
}
