/* Memory-bound: dependent loads over a 64 MiB array, so each load waits for
 * the one before it and most miss every cache and the TLB. The array is
 * written once (a word per 4 KiB page, enough to give it real pages; huge
 * pages asked for, and whether the kernel finds them decides the TLB misses), then each unit of work is one
 * load whose value and index choose the next index. Sensitive to where the
 * kernel places the pages and whether it backs them with huge pages, which
 * is why the coverage study (docs/STATISTICS.md §9) includes it. */
#include <stdint.h>
#include <sys/mman.h>
#include "common.h"

#define BASE_DEFAULT 1500000LL
#define WORDS (64ULL * 1024 * 1024 / sizeof(uint64_t))

int main(int argc, char **argv) {
    long long n = work_units(argc, argv, BASE_DEFAULT);
    uint64_t *a = aligned_alloc(2 << 20, WORDS * sizeof *a);
    if (!a) return 1;
    /* Ask for huge pages: whether the kernel finds them free varies from run
     * to run, as it does for any program that asks. */
    madvise(a, WORDS * sizeof *a, MADV_HUGEPAGE);
    unsigned long long s = 7;
    for (uint64_t i = 0; i < WORDS; i += 512) a[i] = lcg(&s) >> 40;
    uint64_t idx = 1, sum = 0;
    for (long long i = 0; i < n; i++) {
        uint64_t v = a[idx];
        sum += v;
        /* An odd multiplier keeps the walk from settling on a short cycle. */
        idx = (idx * 0x9E3779B97F4A7C15ULL + v + 0x632BE59BD9B4E019ULL) & (WORDS - 1);
    }
    printf("%llu\n", (unsigned long long)sum);
    free(a);
    return 0;
}
