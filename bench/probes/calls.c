/* The calls probe in C, for the retpoline experiment in docs/PROBES.md.
 *
 *   calls MODE [ITERATIONS]     MODE: inline | direct | indirect | unpredictable
 *
 * Runs the case-E loops (seed 004: x[0] += x[1] + y[0]; x[1] += y[1] + x[0])
 * and prints nanoseconds per iteration, timed inside the program with
 * CLOCK_MONOTONIC around the loop only. `indirect` calls through a function
 * pointer loaded from a table with a predictable (constant) target;
 * `unpredictable` picks one of two targets at random per call. Build it
 * plain and with gcc's -mindirect-branch=thunk (retpolines): bench/probes/retpoline.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*kernel)(long *x, const long *y);

__attribute__((noinline)) static void add(long *x, const long *y) {
    x[0] += x[1] + y[0];
    x[1] += y[1] + x[0];
}

/* A different second target, so the two cannot be merged. */
__attribute__((noinline)) static void add_alt(long *x, const long *y) {
    x[0] += x[1] + y[1];
    x[1] += y[0] + x[0];
}

/* volatile: the compiler must load the target for every call. */
static kernel volatile targets[2] = {add, add_alt};
static unsigned char selectors[1 << 16];

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s inline|direct|indirect|unpredictable [ITERATIONS]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    long n = argc > 2 ? atol(argv[2]) : 200000000L;
    long x[2] = {argc, argc}, y[2] = {argc, argc};
    if (strcmp(mode, "unpredictable") == 0) {
        unsigned long s = 0x9e3779b97f4a7c15UL;
        for (size_t i = 0; i < sizeof selectors; i++) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            selectors[i] = s >> 63;
        }
    }
    double t = now_ns();
    if (strcmp(mode, "inline") == 0) {
        long a = x[0], b = x[1];
        for (long i = 0; i < n; i++) {
            a += b + y[0];
            b += y[1] + a;
            __asm__ volatile("" : "+r"(a), "+r"(b));
        }
        x[0] = a; x[1] = b;
    } else if (strcmp(mode, "direct") == 0) {
        for (long i = 0; i < n; i++) add(x, y);
    } else if (strcmp(mode, "indirect") == 0 || strcmp(mode, "unpredictable") == 0) {
        for (long i = 0; i < n; i++) targets[selectors[i & 0xffff]](x, y);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    double ns = now_ns() - t;
    printf("%s %.3f ns/iter (%ld)\n", mode, ns / n, x[0] ^ x[1]);
    return 0;
}
