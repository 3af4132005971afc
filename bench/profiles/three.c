/* Three functions with known shares of the work, for the profile studies
 * (docs/PROFILES.md): each runs the same dependent multiply-add loop for
 * its share of millions of iterations, interleaved in 20 slices, called
 * from `work`. ALPHA and BETA (percent, default 100) scale alpha's and
 * beta's work: the candidate of the attribution study builds with
 * -DALPHA=120 -DBETA=95; gamma is never changed.
 * Usage: three [A B C]  (millions of iterations; default 40 30 30) */
#include <stdlib.h>

#ifndef ALPHA
#define ALPHA 100
#endif
#ifndef BETA
#define BETA 100
#endif

static volatile unsigned long sink;

#define LOOP(n)                                                  \
    do {                                                         \
        unsigned long x = sink;                                  \
        for (unsigned long i = 0; i < (n); i++)                  \
            x = x * 6364136223846793005UL + i;                   \
        sink = x;                                                \
    } while (0)

__attribute__((noinline)) void alpha(unsigned long n) { LOOP(n * ALPHA / 100); }
__attribute__((noinline)) void beta(unsigned long n) { LOOP(n * BETA / 100); }
__attribute__((noinline)) void gamma_(unsigned long n) { LOOP(n); }

__attribute__((noinline)) void work(unsigned long a, unsigned long b, unsigned long c) {
    for (int slice = 0; slice < 20; slice++) {
        alpha(a / 20);
        beta(b / 20);
        gamma_(c / 20);
    }
}

int main(int argc, char **argv) {
    unsigned long m = 1000000UL;
    unsigned long a = argc > 1 ? strtoul(argv[1], 0, 10) : 40;
    unsigned long b = argc > 2 ? strtoul(argv[2], 0, 10) : 30;
    unsigned long c = argc > 3 ? strtoul(argv[3], 0, 10) : 30;
    work(a * m, b * m, c * m);
    return 0;
}
