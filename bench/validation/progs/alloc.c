/* Allocation-heavy: a table of 1024 live blocks; each iteration frees one
 * slot chosen at random and allocates a block of a random size in its place
 * (mostly small, some medium, a few up to 32 KiB), writing its first 64 bytes
 * and its last byte. Exercises tcache, fast/small/large bins, consolidation
 * and heap trimming. The live heap stays around 1 MiB, so its first-touch
 * page faults (not scaled by SLOWDOWN) are a small part of the run. */
#include <string.h>
#include "common.h"

#define BASE_DEFAULT 420000LL
#define SLOTS 1024

static size_t pick_size(unsigned long long r) {
    unsigned k = (unsigned)(r >> 56);           /* 0..255 picks the class */
    unsigned long long v = r >> 8;
    if (k < 200) return 16 + v % 240;           /* 78 %: 16-255 B */
    if (k < 250) return 256 + v % (4096 - 256); /* 20 %: 256 B-4 KiB */
    return 4096 + v % (28 * 1024);              /* 2 %: 4-32 KiB */
}

int main(int argc, char **argv) {
    long long n = work_units(argc, argv, BASE_DEFAULT);
    static unsigned char *slot[SLOTS];
    static size_t len[SLOTS];
    unsigned long long s = 12345, sum = 0;
    for (long long i = 0; i < n; i++) {
        unsigned long long r = lcg(&s);
        unsigned j = (unsigned)(r >> 20) % SLOTS;
        if (slot[j]) {
            sum += slot[j][0] + slot[j][len[j] - 1];
            free(slot[j]);
        }
        size_t sz = pick_size(lcg(&s));
        unsigned char *p = malloc(sz);
        if (!p) { perror("malloc"); return 1; }
        p[0] = (unsigned char)i;
        p[sz - 1] = (unsigned char)(i >> 8);
        if (sz > 64) memset(p + 1, (int)r, 63);
        slot[j] = p;
        len[j] = sz;
    }
    for (unsigned j = 0; j < SLOTS; j++) free(slot[j]);
    printf("%llu\n", sum);
    return 0;
}
