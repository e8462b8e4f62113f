#!/usr/bin/env bash
# Packs a directory into a bundle reproducibly (sorted names, zero mtimes, root
# ownership: the same tree always gives the same digest), stores it in a blob
# directory by digest, and prints the digest for a declaration's `bundle = "…"`.
#
#   examples/make-bundle.sh [DIR [OUT]]
#     DIR  the tree to pack (default: examples/bundle-src)
#     OUT  the blob directory to store it in, as --blobs reads it (default:
#          examples/blobs); the bundle lands in OUT/sha256/<hex>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -gt 2 ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
    echo "usage: $0 [DIR [OUT]]  (default: $here/bundle-src into $here/blobs)" >&2
    exit 2
fi
src=${1:-$here/bundle-src}
out=${2:-$here/blobs}
if [ ! -d "$src" ]; then
    echo "make-bundle: $src is not a directory" >&2
    exit 2
fi
mkdir -p "$out/sha256"
tmp=$(mktemp "$out/sha256/.bundle.XXXXXX")
trap 'rm -f "$tmp"' EXIT
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu \
    -C "$src" -cf "$tmp" .
hex=$(sha256sum "$tmp" | cut -d' ' -f1)
chmod 644 "$tmp"
mv "$tmp" "$out/sha256/$hex"
trap - EXIT
echo "sha256:$hex"
