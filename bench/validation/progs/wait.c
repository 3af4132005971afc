/* Keeps one CPU busy for BUSY_MS of its own CPU time, then sleeps SLEEP_MS:
 * a program whose change adds waiting (SLEEP_MS 0 → 3), for the judged-time
 * rule (docs/COMPARE.md, "Which time is judged"). The busy part is counted
 * in CPU time, so stolen time does not shorten it.
 * Usage: wait SLEEP_MS [BUSY_MS]   (BUSY_MS default 4) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s SLEEP_MS [BUSY_MS]\n", argv[0]);
        return 2;
    }
    double sleep_ms = atof(argv[1]);
    double busy_ms = argc == 3 ? atof(argv[2]) : 4.0;
    volatile unsigned long long x = 1;
    double start = cpu_ms();
    while (cpu_ms() - start < busy_ms) {
        for (int i = 0; i < 1000; i++) x = x * 6364136223846793005ULL + 1;
    }
    if (sleep_ms > 0) {
        struct timespec d = {(time_t)(sleep_ms / 1e3), (long)((sleep_ms - 1e3 * (time_t)(sleep_ms / 1e3)) * 1e6)};
        nanosleep(&d, NULL);
    }
    printf("%llu\n", (unsigned long long)x);
    return 0;
}
