/* Three functions whose self time is in known proportion: each runs the
 * same dependent multiply-add loop for the number of millions of
 * iterations given (default 5 3 2), called from main through `work`. */
#include <stdlib.h>

static volatile unsigned long sink;

#define LOOP(n)                                                  \
    do {                                                         \
        unsigned long x = sink;                                  \
        for (unsigned long i = 0; i < (n); i++)                  \
            x = x * 6364136223846793005UL + i;                   \
        sink = x;                                                \
    } while (0)

__attribute__((noinline)) void alpha(unsigned long n) { LOOP(n); }
__attribute__((noinline)) void beta(unsigned long n) { LOOP(n); }
__attribute__((noinline)) void gamma_(unsigned long n) { LOOP(n); }

__attribute__((noinline)) void work(unsigned long a, unsigned long b, unsigned long c) {
    /* Interleaved in slices, so every function runs throughout the run. */
    for (int slice = 0; slice < 20; slice++) {
        alpha(a / 20);
        beta(b / 20);
        gamma_(c / 20);
    }
}

int main(int argc, char **argv) {
    unsigned long m = 1000000UL;
    unsigned long a = argc > 1 ? strtoul(argv[1], 0, 10) : 5;
    unsigned long b = argc > 2 ? strtoul(argv[2], 0, 10) : 3;
    unsigned long c = argc > 3 ? strtoul(argv[3], 0, 10) : 2;
    work(a * m, b * m, c * m);
    return 0;
}
