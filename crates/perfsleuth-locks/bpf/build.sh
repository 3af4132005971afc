#!/bin/sh
# Rebuilds locks.bpf.o from locks.bpf.c. The object is committed so that a
# build needs no clang; the `bpf_object` test rebuilds it when clang is
# there (.ci/run installs it) and fails if the bytes differ.
# Usage: bpf/build.sh [OUTPUT]   (default: bpf/locks.bpf.o)
set -eu
cd "$(dirname "$0")"
out=${1:-locks.bpf.o}
# The paths in the debug info are made relative, so the object does not
# depend on where the repository is checked out.
exec clang -O2 -g -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 \
    -I/usr/include/x86_64-linux-gnu \
    -fdebug-compilation-dir=. -fdebug-prefix-map="$PWD"=. \
    -c locks.bpf.c -o "$out"
