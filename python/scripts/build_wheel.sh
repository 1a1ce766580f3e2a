#!/bin/sh
# Writes a platform wheel graphmill-*.whl with the graphmill program inside
# into OUTDIR, for machines without Go (a GPU box): there,
#   pip install --no-deps OUTDIR/graphmill-*.whl
# installs a package that runs as it is. Needs Go >= 1.26 and Debian's
# python3-setuptools and python3-wheel here (no network).
# Usage: python/scripts/build_wheel.sh OUTDIR
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
out=$1
py=/usr/bin/python3
here=$(cd "$(dirname "$0")/.." && pwd)
command -v go >/dev/null || { echo "build_wheel.sh: go not found: the wheel carries the program, which needs Go >= 1.26 to build" >&2; exit 1; }
$py -c 'import setuptools, wheel' 2>/dev/null || { echo "build_wheel.sh: needs python3-setuptools and python3-wheel (apt-get install python3-setuptools python3-wheel)" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d); trap 'rm -rf "$tmp" "$here/build" "$here"/*.egg-info' EXIT
$py -m pip wheel --no-build-isolation --no-index --no-deps -w "$tmp" "$here" >&2
whl=$(ls "$tmp"/graphmill-*.whl)
case "$whl" in
*-none-any.whl) echo "build_wheel.sh: $whl is a pure wheel: the program was not built into it" >&2; exit 1 ;;
esac
mv "$whl" "$out"/
echo "$out/$(basename "$whl")"
