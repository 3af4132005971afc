/* Shared argument handling for the validation programs.
 *
 * Usage: PROG SLOWDOWN [BASE]
 *   SLOWDOWN  work multiplier, e.g. 1.0 (baseline), 1.01, 1.03, 1.10
 *   BASE      units of work at SLOWDOWN 1.0 (default: the program's BASE_DEFAULT,
 *             tuned for ~20 ms on the 2-core validation VM; study.py calibrates it)
 * The program does llround(BASE * SLOWDOWN) units, so SLOWDOWN 1.0 is exactly
 * the baseline program (A/A) and 1.03 is 3 % more real work. It prints a
 * checksum so the compiler cannot drop the work. */
#ifndef VALIDATION_COMMON_H
#define VALIDATION_COMMON_H
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static long long work_units(int argc, char **argv, long long base_default) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s SLOWDOWN [BASE]\n", argv[0]);
        exit(2);
    }
    char *end;
    errno = 0;
    double factor = strtod(argv[1], &end);
    if (errno || *end || !(factor > 0.0) || factor > 100.0) {
        fprintf(stderr, "%s: bad SLOWDOWN '%s' (a number in (0, 100])\n", argv[0], argv[1]);
        exit(2);
    }
    long long base = base_default;
    if (argc == 3) {
        errno = 0;
        base = strtoll(argv[2], &end, 10);
        if (errno || *end || base <= 0) {
            fprintf(stderr, "%s: bad BASE '%s' (a positive integer)\n", argv[0], argv[2]);
            exit(2);
        }
    }
    return llround((double)base * factor);
}

/* 64-bit LCG (Knuth's MMIX constants). */
static inline unsigned long long lcg(unsigned long long *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s;
}
#endif
