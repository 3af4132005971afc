#!/bin/sh
# A git repository of a small C program for bisect's real study
# (docs/BISECT.md): COMMITS commits after the first; each commit listed in
# CULPRITS (as N:PERCENT) makes the program do PERCENT more work, the others
# change a comment.
#   bench/bisect/make_repo.sh DIR COMMITS "11:3" ["5:1.5 20:2"]
set -eu
dir=$1 commits=$2 culprits=$3
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
git init -q -b main .
git config user.email bisect@example.com
git config user.name "bisect study"
work=20000000
cat > prog.c <<'C'
#include <stdio.h>
#include "work.h"
int main(void) {
    unsigned long x = 1;
    for (long i = 0; i < WORK; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    printf("%lu\n", x >> 60);
    return 0;
}
C
echo "#define WORK $work" > work.h
echo "0" > notes.txt
git add . && git commit -qm "the program"
i=1
while [ "$i" -le "$commits" ]; do
  pct=""
  for c in $culprits; do
    [ "${c%%:*}" = "$i" ] && pct=${c#*:}
  done
  if [ -n "$pct" ]; then
    work=$(awk -v w="$work" -v p="$pct" 'BEGIN { printf "%d", w * (1 + p / 100) }')
    echo "#define WORK $work" > work.h
    git commit -qam "commit $i: $pct % more work"
  else
    echo "$i" > notes.txt
    git commit -qam "commit $i: notes"
  fi
  i=$((i + 1))
done
