/* Programs that wait, for the wall-profile tests and studies
 * (docs/PROFILES.md, "Off the CPU"). WAIT scales the waits (percent,
 * default 100): the candidate of the study builds with -DWAIT=150.
 *
 *   waits requests N CPU WAIT_US
 *       N requests, each `crunch` (CPU thousands of iterations of a
 *       dependent loop) then `fetch_row`, which waits WAIT_US µs in
 *       poll() on a pipe nobody writes to.
 *   waits lock N HOLD_US
 *       two threads: `holder` takes a mutex N times and keeps it HOLD_US µs
 *       (spinning on the clock), 0.1 ms apart; `waiter` takes it N times
 *       in `take_lock`, 0.3 ms of CPU apart, and so mostly waits for it.
 *       Nothing sleeps: the one wait is the lock's.
 *   waits sleep N US
 *       N times `nap`: nanosleep for US µs.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef WAIT
#define WAIT 100
#endif

static volatile unsigned long sink;

__attribute__((noinline)) void crunch(unsigned long n) {
    unsigned long x = sink;
    for (unsigned long i = 0; i < n; i++)
        x = x * 6364136223846793005UL + i;
    sink = x;
}

__attribute__((noinline)) void fetch_row(int fd, long us) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    /* poll's timeout is in ms: wait in whole ms, then the rest. */
    long ms = us * WAIT / 100 / 1000;
    if (ms > 0)
        poll(&p, 1, (int)ms);
    struct timespec rest = {0, (us * WAIT / 100 % 1000) * 1000};
    if (rest.tv_nsec > 0)
        ppoll(&p, 1, &rest, NULL);
}

static long now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long rounds, hold_us;


__attribute__((noinline)) void hold(long us) {
    long end = now_us() + us;
    while (now_us() < end)
        ;
}

static void *holder(void *arg) {
    (void)arg;
    for (long i = 0; i < rounds; i++) {
        pthread_mutex_lock(&lock);
        hold(hold_us * WAIT / 100);
        pthread_mutex_unlock(&lock);
        /* Let the waiter in before taking it again. */
        hold(100);
    }
    return NULL;
}

__attribute__((noinline)) void take_lock(void) {
    pthread_mutex_lock(&lock);
    pthread_mutex_unlock(&lock);
}

static void *waiter(void *arg) {
    (void)arg;
    for (long i = 0; i < rounds; i++) {
        hold(300);
        take_lock();
    }
    return NULL;
}

__attribute__((noinline)) void nap(long us) {
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: waits requests N CPU WAIT_US | lock N HOLD_US | sleep N US\n");
        return 2;
    }
    long n = atol(argv[2]);
    if (strcmp(argv[1], "requests") == 0 && argc >= 5) {
        int fds[2];
        if (pipe(fds) != 0)
            return 1;
        unsigned long work = strtoul(argv[3], NULL, 10) * 1000UL;
        long us = atol(argv[4]);
        for (long i = 0; i < n; i++) {
            crunch(work);
            fetch_row(fds[0], us);
        }
        return 0;
    }
    if (strcmp(argv[1], "lock") == 0) {
        rounds = n;
        hold_us = atol(argv[3]);
        pthread_t a, b;
        pthread_create(&a, NULL, holder, NULL);
        pthread_create(&b, NULL, waiter, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        return 0;
    }
    if (strcmp(argv[1], "sleep") == 0) {
        long us = atol(argv[3]) * WAIT / 100;
        for (long i = 0; i < n; i++)
            nap(us);
        return 0;
    }
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
