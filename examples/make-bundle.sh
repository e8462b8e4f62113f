#!/usr/bin/env bash
# Rebuilds the example bundle reproducibly and stores it in examples/blobs by
# digest; prints the digest to put in demo.toml.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp)
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu \
    -C bundle-src -cf "$tmp" .
hex=$(sha256sum "$tmp" | cut -d' ' -f1)
mkdir -p blobs/sha256
mv "$tmp" "blobs/sha256/$hex"
chmod 644 "blobs/sha256/$hex"
echo "sha256:$hex"
