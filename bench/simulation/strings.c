/* String- and memory-function heavy: memset, memcpy, strlen, strchr and
 * memcmp over sizes from 7 bytes to 100 KB, and a malloc/free of each size:
 * the functions glibc picks by CPU (ifuncs), for the portable-count study
 * (bench/simulation/portable.py) and crates/perfsleuth/tests/cli/portable.rs. ROUNDS is the
 * first argument (default 50). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 50;
    size_t sizes[] = {7, 33, 100, 300, 1000, 4000, 20000, 100000};
    char *a = malloc(1 << 20), *b = malloc(1 << 20);
    if (!a || !b)
        return 1;
    unsigned long sum = 0;
    for (int r = 0; r < rounds; r++) {
        for (unsigned i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            size_t n = sizes[i];
            memset(a, 'x' + (r & 1), n);
            a[n] = 0;
            memcpy(b, a, n + 1);
            sum += strlen(b) + (unsigned long)(strchr(b, 0) - b) + (memcmp(a, b, n) == 0);
            char *p = malloc(n);
            if (!p)
                return 1;
            memcpy(p, a, n);
            sum += p[n / 2];
            free(p);
        }
    }
    printf("%lu\n", sum);
    return 0;
}
