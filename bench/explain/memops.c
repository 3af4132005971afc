/* memset, memcpy and strlen of a few KiB, ITERATIONS times (first
 * argument, default 20000): sizes under glibc's `rep movsb` threshold, so
 * the vector loop glibc picks for this CPU (AVX2 or SSE2) does the work,
 * for docs/EXPLAIN.md and crates/perfsleuth/tests/cli/explain.rs. The
 * sizes come from the command line so the compiler cannot inline the calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    long iterations = argc > 1 ? atol(argv[1]) : 20000;
    size_t n = argc > 2 ? (size_t)atol(argv[2]) : 1536;
    size_t len = argc > 3 ? (size_t)atol(argv[3]) : 4096;
    char *a = malloc(n), *b = malloc(n), *s = malloc(len + 1);
    if (!a || !b || !s || n == 0 || len < 64)
        return 1;
    memset(s, 'x', len);
    s[len] = 0;
    size_t total = 0;
    for (long i = 0; i < iterations; i++) {
        memset(a, 'a' + (int)(i % 20), n);
        memcpy(b, a, n);
        size_t cut = len - (size_t)(i % 64);
        s[cut] = 0;
        total += strlen(s) + (unsigned char)b[(size_t)i % n];
        s[cut] = 'x';
    }
    printf("%zu\n", total);
    return 0;
}
