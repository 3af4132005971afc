/* Two threads spinning for the given milliseconds (default 300): a
 * program that keeps two CPUs sampled at once. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static double ms;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void *spin(void *arg) {
    (void)arg;
    double end = now_ms() + ms;
    volatile unsigned long x = 0;
    while (now_ms() < end)
        for (int i = 0; i < 1000; i++) x++;
    return 0;
}

int main(int argc, char **argv) {
    ms = argc > 1 ? atof(argv[1]) : 300;
    pthread_t t;
    pthread_create(&t, 0, spin, 0);
    spin(0);
    pthread_join(t, 0);
    return 0;
}
