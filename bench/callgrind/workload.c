/* A small deterministic workload for bench/simulation_overhead.sh: a
 * recursive function, a malloc/free loop and a qsort with a callback
 * (about 2 M instructions). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int main(void) {
    long sum = fib(20);
    for (int i = 0; i < 2000; i++) {
        char *p = malloc(32 + i % 512);
        memset(p, i, 32 + i % 512);
        sum += p[i % 32];
        free(p);
    }
    int n = 4000, *v = malloc(n * sizeof *v);
    unsigned s = 1;
    for (int i = 0; i < n; i++) { s = s * 1103515245u + 12345u; v[i] = (int)(s >> 8); }
    qsort(v, n, sizeof *v, cmp_int);
    printf("%ld %d\n", sum, v[n / 2]);
    free(v);
    return 0;
}
