/* CPU-bound: a serial chain of LCG steps and integer mixing (multiply,
 * xor-shift, rotate). Each iteration depends on the previous one, so the
 * compiler can neither vectorise nor shorten it: the time is linear in the
 * iteration count. No memory traffic beyond registers. */
#include "common.h"

#define BASE_DEFAULT 15000000LL

int main(int argc, char **argv) {
    long long n = work_units(argc, argv, BASE_DEFAULT);
    unsigned long long s = 0x9E3779B97F4A7C15ULL, h = 0;
    for (long long i = 0; i < n; i++) {
        unsigned long long x = lcg(&s);
        x ^= x >> 31;
        x *= 0xBF58476D1CE4E5B9ULL;
        x ^= x >> 27;
        h = ((h << 7) | (h >> 57)) ^ x;
    }
    printf("%llu\n", h);
    return 0;
}
