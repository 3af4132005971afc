/* Two mutexes of very different contention, each taken in its own function:
 * `hot` on 9 of 10 operations, `cold` on 1 of 10. The contention is made
 * deterministic so the expected shares are exact: for every operation a
 * holder thread takes the operation's mutex and keeps it for HOLD_US while
 * the worker calls hot_add or cold_add, which must wait for it. Each
 * operation's wait is then about HOLD_US, whichever mutex it is, and the
 * wait shares are 9:1 in time as well as in count.
 * Usage: two_locks [OPS] [HOLD_US]   (defaults 400, 200) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t cold = PTHREAD_MUTEX_INITIALIZER;
static long hot_count, cold_count, ops = 400, hold_us = 200;
static atomic_long taken = -1, done = -1;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

__attribute__((noinline)) void hot_add(void) {
    pthread_mutex_lock(&hot);
    hot_count++;
    pthread_mutex_unlock(&hot);
}

__attribute__((noinline)) void cold_add(void) {
    pthread_mutex_lock(&cold);
    cold_count++;
    pthread_mutex_unlock(&cold);
}

static pthread_mutex_t *lock_of(long i) { return i % 10 == 9 ? &cold : &hot; }

static void *holder(void *arg) {
    (void)arg;
    for (long i = 0; i < ops; i++) {
        pthread_mutex_t *m = lock_of(i);
        pthread_mutex_lock(m);
        atomic_store(&taken, i);
        double until = now_us() + hold_us;
        while (now_us() < until) {
        }
        pthread_mutex_unlock(m);
        while (atomic_load(&done) < i) {
        }
    }
    return 0;
}

static void *worker(void *arg) {
    (void)arg;
    for (long i = 0; i < ops; i++) {
        while (atomic_load(&taken) < i) {
        }
        if (lock_of(i) == &cold)
            cold_add();
        else
            hot_add();
        atomic_store(&done, i);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1) ops = atol(argv[1]);
    if (argc > 2) hold_us = atol(argv[2]);
    pthread_t h, w;
    double start = now_us();
    pthread_create(&h, 0, holder, 0);
    pthread_create(&w, 0, worker, 0);
    pthread_join(w, 0);
    pthread_join(h, 0);
    printf("hot %ld cold %ld\n{\"seconds\":%.6f}\n", hot_count, cold_count, (now_us() - start) / 1e6);
    return hot_count + cold_count == ops ? 0 : 1;
}
