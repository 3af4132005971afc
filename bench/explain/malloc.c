/* malloc-bound on purpose, for docs/EXPLAIN.md and
 * crates/perfsleuth/tests/cli/explain.rs: THREADS threads each allocate,
 * touch and free COUNT blocks of SIZE bytes, keeping the last 16.
 *
 *   malloc 4 2048 100000    blocks too big for the per-thread cache: every
 *                           call takes an arena's lock. With the default
 *                           arenas each thread soon has its own; with
 *                           MALLOC_ARENA_MAX=1 they queue on one lock
 *                           (several times slower on two or more CPUs).
 *   malloc 1 262144 2000    blocks above the 128 KiB mmap threshold: glibc
 *                           raises its threshold after the first free and
 *                           serves the rest from the heap; a fixed
 *                           MALLOC_MMAP_THRESHOLD_ (or
 *                           glibc.malloc.mmap_threshold) keeps every block
 *                           an mmap, its pages faulted in and unmapped again.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long count = 100000;
static size_t size = 2048;

static void *work(void *arg) {
    (void)arg;
    void *keep[16] = {0};
    for (long i = 0; i < count; i++) {
        int k = i & 15;
        free(keep[k]);
        size_t n = size + (size_t)(i & 511);
        keep[k] = malloc(n);
        if (!keep[k])
            abort();
        memset(keep[k], (int)i, n);
    }
    for (int k = 0; k < 16; k++)
        free(keep[k]);
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2)
        size = (size_t)atol(argv[2]);
    if (argc > 3)
        count = atol(argv[3]);
    if (threads < 1 || threads > 64)
        return 2;
    pthread_t t[64];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, work, NULL) != 0)
            return 1;
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    return 0;
}
