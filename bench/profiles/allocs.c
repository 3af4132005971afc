/* A program that allocates, for the allocation-profile tests and studies
 * (docs/PROFILES.md, "Allocations"). It builds a table of N rows: each row
 * is made by `make_row`, which asks `intern` for a copy of its key (a 64-
 * to 127-byte string) and allocates its cells (one calloc of 8 × 8 bytes);
 * every other row is dropped as it goes; a log buffer grows by realloc.
 * MORE (percent, default 100) scales the copies `intern` makes: MORE - 100
 * percent of the keys are copied twice (the extra copy freed at once); the
 * candidate of the study builds with -DMORE=110 to allocate more in
 * `intern` only.
 * Usage: allocs N */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MORE
#define MORE 100
#endif

/* Keeps the compiler from removing an allocation it can see is unused. */
static char *volatile escape;

struct row {
    char *key;
    long *cells;
};

__attribute__((noinline)) char *intern(long i) {
    char buf[160];
    int n = snprintf(buf, sizeof buf, "key-%ld-", i);
    while (n < 64 + (int)(i % 64)) {
        buf[n] = (char)('a' + (i + n) % 26);
        n++;
    }
    buf[n] = 0;
    /* MORE - 100 % of the keys are copied twice: one copy is thrown away. */
    if (i % 100 < MORE - 100) {
        char *waste = malloc((size_t)n + 1);
        memcpy(waste, buf, (size_t)n + 1);
        escape = waste;
        free(escape);
    }
    char *p = malloc((size_t)n + 1);
    memcpy(p, buf, (size_t)n + 1);
    return p;
}

__attribute__((noinline)) void make_row(struct row *r, long i) {
    r->key = intern(i);
    r->cells = calloc(8, sizeof(long));
    r->cells[i % 8] = i;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    struct row *rows = calloc((size_t)n, sizeof *rows);
    char *log = NULL;
    size_t log_len = 0;
    long sum = 0;
    for (long i = 0; i < n; i++) {
        make_row(&rows[i], i);
        if (i % 2) {
            sum += rows[i].key[0] + rows[i].cells[i % 8];
            free(rows[i].key);
            free(rows[i].cells);
            rows[i].key = NULL;
        }
        if (i % 1000 == 0) {
            log = realloc(log, log_len + 4096);
            memset(log + log_len, 'x', 4096);
            log_len += 4096;
        }
    }
    for (long i = 0; i < n; i++)
        if (rows[i].key) {
            sum += rows[i].key[1];
            free(rows[i].key);
            free(rows[i].cells);
        }
    free(rows);
    free(log);
    printf("%ld\n", sum);
    return 0;
}
