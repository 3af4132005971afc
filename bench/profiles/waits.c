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
 *
 * With WAITS_REPORT set to a file, each run appends the time its threads
 * (the main one for requests and sleep, holder and waiter for lock) were
 * off the CPU, as each thread measures it from inside: its lifetime on the
 * monotonic clock less its CPU time (CLOCK_THREAD_CPUTIME_ID), in ns: the
 * studies' reference for the profile's totals.
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

static long now_ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* The threads' time off the CPU so far, ns (WAITS_REPORT). */
static long off_cpu_ns;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

/* A thread's start, for its off-CPU time at its end. */
static long thread_start(void) { return now_ns(CLOCK_MONOTONIC); }

static void thread_end(long start) {
    long off = now_ns(CLOCK_MONOTONIC) - start - now_ns(CLOCK_THREAD_CPUTIME_ID);
    pthread_mutex_lock(&report_lock);
    off_cpu_ns += off;
    pthread_mutex_unlock(&report_lock);
}

static void report(void) {
    const char *path = getenv("WAITS_REPORT");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "%ld\n", off_cpu_ns);
        fclose(f);
    }
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
    long start = thread_start();
    for (long i = 0; i < rounds; i++) {
        pthread_mutex_lock(&lock);
        hold(hold_us * WAIT / 100);
        pthread_mutex_unlock(&lock);
        /* Let the waiter in before taking it again. */
        hold(100);
    }
    thread_end(start);
    return NULL;
}

__attribute__((noinline)) void take_lock(void) {
    pthread_mutex_lock(&lock);
    pthread_mutex_unlock(&lock);
}

static void *waiter(void *arg) {
    (void)arg;
    long start = thread_start();
    for (long i = 0; i < rounds; i++) {
        hold(300);
        take_lock();
    }
    thread_end(start);
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
    /* CPU time before this point (the loader, libc's start) is the main
     * thread's but not its lifetime's here: counted from zero alike. */
    long start = thread_start() - now_ns(CLOCK_THREAD_CPUTIME_ID);
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
        thread_end(start);
        report();
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
        report();
        return 0;
    }
    if (strcmp(argv[1], "sleep") == 0) {
        long us = atol(argv[3]) * WAIT / 100;
        for (long i = 0; i < n; i++)
            nap(us);
        thread_end(start);
        report();
        return 0;
    }
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
