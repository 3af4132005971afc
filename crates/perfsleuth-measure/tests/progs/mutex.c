/* Four threads lock and unlock a mutex N times each, with a tiny critical
 * section. "shared": all four share one mutex (contention: futex waits and
 * wakes). "private": each thread has its own mutex (the same work, no
 * contention). Usage: mutex shared|private [N]
 *
 * Every 512th time the holder sleeps 1 us inside the critical section, so
 * that the others run into a held lock even when they do not overlap on
 * different CPUs (one free CPU, or a busy test machine): the contention does
 * not depend on scheduling luck. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define THREADS 4

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t own_lock[THREADS];
static volatile unsigned long counter[THREADS];
static long iterations = 200000;
static int use_shared;

static void *work(void *arg) {
    long me = (long)arg;
    pthread_mutex_t *m = use_shared ? &shared_lock : &own_lock[me];
    for (long i = 0; i < iterations; i++) {
        pthread_mutex_lock(m);
        counter[use_shared ? 0 : me]++;
        if ((i & 511) == 511) {
            struct timespec nap = {0, 1000};
            nanosleep(&nap, NULL);
        }
        pthread_mutex_unlock(m);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s shared|private [N]\n", argv[0]);
        return 2;
    }
    use_shared = strcmp(argv[1], "shared") == 0;
    if (argc > 2)
        iterations = atol(argv[2]);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) {
        pthread_mutex_init(&own_lock[i], NULL);
        pthread_create(&t[i], NULL, work, (void *)i);
    }
    unsigned long total = 0;
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
        total += counter[i];
    return total == (unsigned long)(THREADS * iterations) ? 0 : 1;
}
