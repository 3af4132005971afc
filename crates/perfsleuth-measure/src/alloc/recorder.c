/* perfsleuth's allocation recorder: loaded into a benchmarked command with
 * LD_PRELOAD by `--profile=alloc` (docs/PROFILES.md, "Allocations"). It
 * sits in front of the C library's allocator (whatever `malloc` the program
 * would call: glibc's, or jemalloc's where the program links it under the
 * standard names) and, for every process of the run:
 *
 * - counts every allocation exactly: malloc, calloc, realloc (which frees
 *   the old block and allocates the new one, as valgrind's DHAT counts
 *   it), the aligned variants, and anonymous mmap; the bytes asked
 *   for; the frees; and the live bytes (as the allocator's usable sizes, the
 *   only size it knows at a free) with their peak;
 * - samples stacks: on average one allocation in every sample_bytes bytes
 *   allocated (SAMPLE_BYTES, or $PERFSLEUTH_ALLOC_SAMPLE_BYTES: a Poisson
 *   process over the bytes, as tcmalloc, jemalloc and Go sample), with
 *   glibc's backtrace(); a sampled allocation of s bytes stands for
 *   1 / (1 - exp(-s / sample_bytes)) allocations, so each
 *   stack's count and bytes are unbiased estimates; the sampled blocks still
 *   live are followed to their free, and those live when the live bytes
 *   last reached a new peak (within 5 %) are the stacks live at the peak;
 * - writes one file per process at its exit, into $PERFSLEUTH_ALLOC_DIR:
 *   the counts, the sampled stacks (return addresses) and the process's
 *   memory map, which perfsleuth names with its own symbolizer.
 *
 * Nothing here allocates through the hooks: its own memory is mmap'd. A
 * thread inside a hook (backtrace may allocate when it first loads
 * libgcc_s) passes straight through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SAMPLE_BYTES
#define SAMPLE_BYTES (512 * 1024)
#endif
#define MAX_DEPTH 64
#define STACKS 8192         /* distinct sampled stacks kept */
#define LIVE 65536          /* sampled blocks followed at once */
#define BOOT_BYTES (64 * 1024)

#define EXPORT __attribute__((visibility("default")))

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static void *(*real_memalign)(size_t, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static size_t (*real_usable)(void *);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);

/* Allocations made while the real functions are being looked up (dlsym
 * may allocate): from this buffer, never freed. */
static char boot[BOOT_BYTES] __attribute__((aligned(16)));
static size_t boot_used;

/* The counts, per thread: each thread adds to its own slot without an
 * atomic read-modify-write (the allocator's fast path is a few ns; a locked
 * add on every call would double the cost); the report sums the slots.
 * Threads beyond the slots share the last with locked adds. */
#define SLOTS 4096
struct counts {
    _Atomic uint64_t allocs, bytes, frees;
    char pad[64 - 3 * sizeof(uint64_t)];
};
static struct counts *slots; /* SLOTS entries, mmap'd */
static _Atomic uint32_t n_slots;
static _Atomic uint64_t live, peak, dropped;
static int64_t sample_bytes = SAMPLE_BYTES;
static _Atomic uint64_t snapshot_at = SAMPLE_BYTES;
static int enabled;
static uint64_t start_ns;

/* Initial-exec: the general model may call malloc at a thread's first
 * access, from inside the hook. A preloaded library may use static TLS. */
#define TLS __thread __attribute__((tls_model("initial-exec")))
static TLS int in_hook;
static TLS struct counts *mine;
static TLS int shared_slot;

/* Set up at the first call of any hook, or at load: a library the program
 * links (libstdc++'s start-up allocates) may be started before this one's
 * constructor runs, and its allocations count. */
static _Atomic int started;
static void init(void);

static inline void start(void) {
    if (__builtin_expect(!atomic_load_explicit(&started, memory_order_acquire), 0) && !in_hook)
        init();
}
static TLS int64_t until_sample;
static TLS uint64_t rng;

struct stack {
    uint64_t hash;
    uint32_t depth;
    uint64_t samples;
    double count, bytes;  /* estimated allocations and bytes */
    double live, at_peak; /* estimated bytes live now, and at the peak */
    void *pc[MAX_DEPTH];
};

struct block {
    _Atomic(uintptr_t) ptr; /* 0: empty, 1: removed */
    uint32_t stack;
    double bytes;
};

/* Which addresses may be followed blocks, counted by a hash of the address:
 * a free looks here first (16 KiB, in the first-level cache) and searches
 * the table of followed blocks only where the count is not 0; few blocks
 * are followed at a time (the live bytes over SAMPLE_BYTES). */
#define FILTER 16384
static _Atomic uint8_t filter[FILTER];

static uint32_t filter_of(uintptr_t key) {
    return (uint32_t)((key >> 4) * 0x85ebca6bu) >> 18;
}

static struct stack *stacks; /* STACKS entries, mmap'd */
static struct block *blocks; /* LIVE entries, mmap'd */
static uint32_t n_stacks;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t self_lo, self_hi; /* this library's text: frames to skip */

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t next_random(void) {
    if (!rng)
        rng = now_ns() ^ ((uint64_t)syscall(SYS_gettid) << 32) ^ 0x9e3779b97f4a7c15u;
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Bytes until the next sample: exponential with mean sample_bytes. */
static int64_t next_gap(void) {
    double u = ((next_random() >> 11) + 1) * (1.0 / 9007199254740993.0);
    return (int64_t)(-log(u) * (double)sample_bytes) + 1;
}

static void *boot_alloc(size_t n) {
    size_t at = (boot_used + 15) & ~(size_t)15;
    if (at + n > BOOT_BYTES)
        return NULL;
    boot_used = at + n;
    return boot + at;
}

static int is_boot(void *p) {
    return (char *)p >= boot && (char *)p < boot + BOOT_BYTES;
}

static void resolve(void) {
    static int resolving;
    if (real_malloc || resolving)
        return;
    resolving = 1;
    real_calloc = dlsym(RTLD_NEXT, "calloc");
    real_malloc = dlsym(RTLD_NEXT, "malloc");
    real_realloc = dlsym(RTLD_NEXT, "realloc");
    real_free = dlsym(RTLD_NEXT, "free");
    real_memalign = dlsym(RTLD_NEXT, "memalign");
    real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    real_valloc = dlsym(RTLD_NEXT, "valloc");
    real_pvalloc = dlsym(RTLD_NEXT, "pvalloc");
    real_usable = dlsym(RTLD_NEXT, "malloc_usable_size");
    real_mmap = dlsym(RTLD_NEXT, "mmap");
    real_munmap = dlsym(RTLD_NEXT, "munmap");
    resolving = 0;
}

static size_t usable(void *p) {
    return real_usable ? real_usable(p) : 0;
}

static void sample(void *p, size_t size);
static void live_add(int64_t d);
static pthread_key_t flush_key;

/* This thread's slot, claimed at its first call. */
static struct counts *my_slot(void) {
    if (__builtin_expect(!mine, 0)) {
        uint32_t i = atomic_fetch_add_explicit(&n_slots, 1, memory_order_relaxed);
        shared_slot = i >= SLOTS - 1;
        mine = &slots[shared_slot ? SLOTS - 1 : i];
        int was = in_hook;
        in_hook = 1; /* pthread_setspecific may allocate */
        pthread_setspecific(flush_key, mine);
        in_hook = was;
    }
    return mine;
}

/* Adds `n` to one of this thread's counts: a plain load and store in its
 * own slot, a locked add in the shared one. */
static inline __attribute__((always_inline)) void add(_Atomic uint64_t *c, uint64_t n) {
    if (__builtin_expect(shared_slot, 0))
        atomic_fetch_add_explicit(c, n, memory_order_relaxed);
    else
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

static uint64_t total(int which) {
    uint64_t t = 0;
    for (uint32_t i = 0; slots && i < SLOTS; i++)
        t += atomic_load_explicit(which == 0 ? &slots[i].allocs : which == 1 ? &slots[i].bytes : &slots[i].frees,
                                  memory_order_relaxed);
    return t;
}

/* A block of `size` bytes asked for, at `p` (usable: its usable size). */
static void allocated(void *p, size_t size, size_t usable_bytes) {
    start();
    if (!enabled || in_hook || !p)
        return;
    struct counts *c = my_slot();
    add(&c->allocs, 1);
    add(&c->bytes, size);
    live_add((int64_t)usable_bytes);
    if (until_sample == 0)
        until_sample = next_gap();
    until_sample -= (int64_t)size;
    if (until_sample < 0) {
        until_sample = next_gap();
        sample(p, size);
    }
}

/* Adds `d` (negative: freed) to the live bytes and follows their peak.
 * While one thread allocates, every change goes to the shared count and
 * the peak is exact; once there are several, each thread gathers up to
 * FLUSH bytes either way before it adds them (a locked add on one cache
 * line for every allocation of every thread would serialize them), so the
 * peak may be under the true one by up to FLUSH bytes a thread; a thread
 * adds what it holds when it ends. */
#define FLUSH (16 * 1024)
static TLS int64_t pending;

static void flush_live(int64_t d) {
    uint64_t now = atomic_fetch_add_explicit(&live, (uint64_t)d, memory_order_relaxed) + (uint64_t)d;
    if (d <= 0)
        return;
    uint64_t top = atomic_load_explicit(&peak, memory_order_relaxed);
    while (now > top &&
           !atomic_compare_exchange_weak_explicit(&peak, &top, now, memory_order_relaxed, memory_order_relaxed))
        ;
    if (now >= atomic_load_explicit(&snapshot_at, memory_order_relaxed) && stacks) {
        in_hook = 1;
        pthread_mutex_lock(&mutex);
        if (now >= atomic_load_explicit(&snapshot_at, memory_order_relaxed)) {
            for (uint32_t i = 0; i < n_stacks; i++)
                stacks[i].at_peak = stacks[i].live;
            atomic_store_explicit(&snapshot_at, now + now / 20 + (uint64_t)sample_bytes, memory_order_relaxed);
        }
        pthread_mutex_unlock(&mutex);
        in_hook = 0;
    }
}

static void live_add(int64_t d) {
    if (__builtin_expect(atomic_load_explicit(&n_slots, memory_order_relaxed) <= 1, 1) && pending == 0) {
        flush_live(d);
        return;
    }
    pending += d;
    if (pending > FLUSH || pending < -FLUSH) {
        int64_t all = pending;
        pending = 0;
        flush_live(all);
    }
}

/* A thread's end: what it holds goes to the shared count. */
static void thread_ends(void *unused) {
    (void)unused;
    if (pending) {
        int64_t all = pending;
        pending = 0;
        flush_live(all);
    }
}

static void released(void *p, size_t usable_bytes) {
    if (!enabled || in_hook || !p)
        return;
    add(&my_slot()->frees, 1);
    live_add(-(int64_t)usable_bytes);
    uintptr_t key = (uintptr_t)p;
    if (!blocks || atomic_load_explicit(&filter[filter_of(key)], memory_order_relaxed) == 0)
        return;
    uint32_t mask = LIVE - 1, i = (uint32_t)((key >> 4) * 0x9e3779b9u) & mask;
    for (uint32_t probe = 0; probe < LIVE; probe++, i = (i + 1) & mask) {
        uintptr_t at = atomic_load_explicit(&blocks[i].ptr, memory_order_acquire);
        if (at == 0)
            return;
        if (at == key) {
            in_hook = 1;
            pthread_mutex_lock(&mutex);
            if (atomic_load_explicit(&blocks[i].ptr, memory_order_relaxed) == key) {
                stacks[blocks[i].stack].live -= blocks[i].bytes;
                atomic_store_explicit(&blocks[i].ptr, 1, memory_order_release);
                uint32_t f = filter_of(key);
                uint8_t c = atomic_load_explicit(&filter[f], memory_order_relaxed);
                if (c != 255) /* a saturated count stays: only slower */
                    atomic_store_explicit(&filter[f], c - 1, memory_order_relaxed);
            }
            pthread_mutex_unlock(&mutex);
            in_hook = 0;
            return;
        }
    }
}

static uint64_t hash_pcs(void **pc, int n) {
    uint64_t h = 1469598103934665603u;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint64_t)(uintptr_t)pc[i]) * 1099511628211u;
    return h;
}

static void sample(void *p, size_t size) {
    if (!stacks)
        return;
    in_hook = 1;
    void *raw[MAX_DEPTH + 8];
    int n = backtrace(raw, MAX_DEPTH + 8);
    /* This library's frames (the hook, backtrace's caller) are not the program's. */
    int skip = 0;
    while (skip < n && (uintptr_t)raw[skip] >= self_lo && (uintptr_t)raw[skip] < self_hi)
        skip++;
    void **pc = raw + skip;
    int depth = n - skip > MAX_DEPTH ? MAX_DEPTH : n - skip;
    double weight = 1.0 / (1.0 - exp(-(double)size / (double)sample_bytes));
    uint64_t h = hash_pcs(pc, depth);
    pthread_mutex_lock(&mutex);
    uint32_t s = 0;
    while (s < n_stacks && !(stacks[s].hash == h && stacks[s].depth == (uint32_t)depth &&
                             memcmp(stacks[s].pc, pc, sizeof(void *) * depth) == 0))
        s++;
    if (s == n_stacks) {
        if (n_stacks == STACKS) {
            atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
            pthread_mutex_unlock(&mutex);
            in_hook = 0;
            return;
        }
        n_stacks++;
        stacks[s].hash = h;
        stacks[s].depth = (uint32_t)depth;
        memcpy(stacks[s].pc, pc, sizeof(void *) * depth);
    }
    stacks[s].samples++;
    stacks[s].count += weight;
    stacks[s].bytes += weight * (double)size;
    stacks[s].live += weight * (double)size;
    /* Follow the block to its free. */
    uintptr_t key = (uintptr_t)p;
    uint32_t mask = LIVE - 1, i = (uint32_t)((key >> 4) * 0x9e3779b9u) & mask;
    uint32_t probe = 0;
    for (; probe < LIVE; probe++, i = (i + 1) & mask) {
        uintptr_t at = atomic_load_explicit(&blocks[i].ptr, memory_order_relaxed);
        if (at == 0 || at == 1)
            break;
    }
    if (probe < LIVE) {
        blocks[i].stack = s;
        blocks[i].bytes = weight * (double)size;
        uint32_t f = filter_of(key);
        uint8_t c = atomic_load_explicit(&filter[f], memory_order_relaxed);
        if (c != 255)
            atomic_store_explicit(&filter[f], c + 1, memory_order_relaxed);
        atomic_store_explicit(&blocks[i].ptr, key, memory_order_release);
    } else {
        stacks[s].live -= weight * (double)size;
        atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&mutex);
    in_hook = 0;
}

EXPORT void *malloc(size_t n) {
    if (!real_malloc) {
        resolve();
        if (!real_malloc)
            return boot_alloc(n);
    }
    void *p = real_malloc(n);
    allocated(p, n, usable(p));
    return p;
}

EXPORT void *calloc(size_t n, size_t m) {
    if (!real_calloc) {
        resolve();
        if (!real_calloc) {
            void *p = boot_alloc(n * m);
            return p; /* the buffer is zero */
        }
    }
    void *p = real_calloc(n, m);
    allocated(p, n * m, usable(p));
    return p;
}

EXPORT void free(void *p) {
    if (!p || is_boot(p))
        return;
    if (!real_free)
        resolve();
    released(p, usable(p));
    real_free(p);
}

EXPORT void *realloc(void *p, size_t n) {
    if (is_boot(p)) {
        void *q = malloc(n);
        size_t room = (size_t)(boot + BOOT_BYTES - (char *)p);
        if (q)
            memcpy(q, p, n < room ? n : room);
        return q;
    }
    if (!real_realloc)
        resolve();
    size_t before = p ? usable(p) : 0;
    void *q = real_realloc(p, n);
    if (!q && n)
        return q;
    /* As valgrind's DHAT counts it: a realloc frees the old block and
     * allocates the new one, moved or not. */
    if (p)
        released(p, before);
    if (q)
        allocated(q, n, usable(q));
    return q;
}

EXPORT void *memalign(size_t align, size_t n) {
    if (!real_memalign)
        resolve();
    void *p = real_memalign(align, n);
    allocated(p, n, usable(p));
    return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t n) {
    if (!real_posix_memalign)
        resolve();
    int r = real_posix_memalign(out, align, n);
    if (r == 0)
        allocated(*out, n, usable(*out));
    return r;
}

EXPORT void *aligned_alloc(size_t align, size_t n) {
    if (!real_aligned_alloc)
        resolve();
    void *p = real_aligned_alloc(align, n);
    allocated(p, n, usable(p));
    return p;
}

EXPORT void *valloc(size_t n) {
    if (!real_valloc)
        resolve();
    void *p = real_valloc(n);
    allocated(p, n, usable(p));
    return p;
}

EXPORT void *pvalloc(size_t n) {
    if (!real_pvalloc)
        resolve();
    void *p = real_pvalloc(n);
    allocated(p, n, usable(p));
    return p;
}

/* The program's own anonymous mappings, each an allocation of its length
 * (the C library's allocator maps through its internal entry, not this
 * one, so nothing counts twice), followed to their unmapping, whole or in
 * part, so that the live bytes come down with it. */
#define MAPPINGS 4096
static struct {
    uintptr_t start, end;
} mappings[MAPPINGS];

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    if (!real_mmap)
        resolve();
    void *p = real_mmap(addr, len, prot, flags, fd, off);
    start();
    if (p == MAP_FAILED || !(flags & MAP_ANONYMOUS) || !enabled || in_hook)
        return p;
    in_hook = 1;
    pthread_mutex_lock(&mutex);
    int kept = 0;
    for (int i = 0; i < MAPPINGS && !kept; i++)
        if (mappings[i].start == mappings[i].end) {
            mappings[i].start = (uintptr_t)p;
            mappings[i].end = (uintptr_t)p + len;
            kept = 1;
        }
    pthread_mutex_unlock(&mutex);
    in_hook = 0;
    if (kept)
        allocated(p, len, len);
    else
        atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
    return p;
}

EXPORT int munmap(void *addr, size_t len) {
    if (!real_munmap)
        resolve();
    int r = real_munmap(addr, len);
    if (r != 0 || !enabled || in_hook)
        return r;
    uintptr_t lo = (uintptr_t)addr, hi = lo + len;
    uint64_t gone = 0;
    int whole = 0;
    in_hook = 1;
    pthread_mutex_lock(&mutex);
    for (int i = 0; i < MAPPINGS; i++) {
        uintptr_t s = mappings[i].start, e = mappings[i].end;
        if (s == e || e <= lo || s >= hi)
            continue;
        uintptr_t a = s > lo ? s : lo, b = e < hi ? e : hi;
        gone += b - a;
        if (a == s && b == e) {
            mappings[i].start = mappings[i].end = 0;
            whole++;
        } else if (a == s) {
            mappings[i].start = b;
        } else if (b == e) {
            mappings[i].end = a;
        } else {
            /* A hole in the middle: the rest after it needs a slot. */
            mappings[i].end = a;
            for (int j = 0; j < MAPPINGS; j++)
                if (mappings[j].start == mappings[j].end) {
                    mappings[j].start = b;
                    mappings[j].end = e;
                    break;
                }
        }
    }
    pthread_mutex_unlock(&mutex);
    in_hook = 0;
    if (gone) {
        live_add(-(int64_t)gone);
        add(&my_slot()->frees, (uint64_t)whole);
    }
    return r;
}

/* Writes all of `s` to `fd`. */
static void put(int fd, const char *s, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void report(void) {
    if (!enabled)
        return;
    thread_ends(NULL);
    enabled = 0;
    in_hook = 1;
    const char *dir = getenv("PERFSLEUTH_ALLOC_DIR");
    if (!dir)
        return;
    char path[4096], line[4096];
    snprintf(path, sizeof path, "%s/%020llu-%d.alloc", dir, (unsigned long long)start_ns, (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    int n = snprintf(line, sizeof line,
                     "perfsleuth-alloc 1\npid %d\nppid %d\nstart_ns %llu\nallocs %llu\nbytes %llu\nfrees %llu\n"
                     "peak_live %llu\nsample_bytes %lld\ndropped %llu\n",
                     (int)getpid(), (int)getppid(), (unsigned long long)start_ns,
                     (unsigned long long)total(0), (unsigned long long)total(1),
                     (unsigned long long)total(2), (unsigned long long)atomic_load(&peak),
                     (long long)sample_bytes, (unsigned long long)atomic_load(&dropped));
    put(fd, line, (size_t)n);
    pthread_mutex_lock(&mutex);
    for (uint32_t s = 0; stacks && s < n_stacks; s++) {
        n = snprintf(line, sizeof line, "stack %llu %.3f %.3f %.3f", (unsigned long long)stacks[s].samples,
                     stacks[s].count, stacks[s].bytes, stacks[s].at_peak);
        for (uint32_t d = 0; d < stacks[s].depth && n < (int)sizeof line - 24; d++)
            n += snprintf(line + n, sizeof line - (size_t)n, " %lx", (unsigned long)(uintptr_t)stacks[s].pc[d]);
        line[n++] = '\n';
        put(fd, line, (size_t)n);
    }
    pthread_mutex_unlock(&mutex);
    put(fd, "maps\n", 5);
    int maps = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (maps >= 0) {
        ssize_t r;
        while ((r = read(maps, line, sizeof line)) > 0)
            put(fd, line, (size_t)r);
        close(maps);
    }
    close(fd);
}

/* A forked child starts its own count (its parent keeps the one so far). */
static void after_fork(void) {
    /* Only the forking thread lives on in the child: it keeps its slot. */
    if (slots)
        memset(slots, 0, sizeof(struct counts) * SLOTS);
    atomic_store(&n_slots, 0);
    mine = NULL;
    atomic_store(&live, 0);
    atomic_store(&peak, 0);
    atomic_store(&dropped, 0);
    atomic_store(&snapshot_at, (uint64_t)sample_bytes);
    for (uint32_t s = 0; stacks && s < n_stacks; s++)
        memset(&stacks[s], 0, sizeof stacks[s]);
    n_stacks = 0;
    if (blocks)
        memset(blocks, 0, sizeof(struct block) * LIVE);
    memset((void *)filter, 0, sizeof filter);
    memset(mappings, 0, sizeof mappings);
    pthread_mutex_init(&mutex, NULL);
    start_ns = now_ns();
}

__attribute__((constructor)) static void init(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&started, &expected, 1))
        return;
    in_hook = 1;
    resolve();
    if (!getenv("PERFSLEUTH_ALLOC_DIR")) {
        in_hook = 0;
        return;
    }
    const char *every = getenv("PERFSLEUTH_ALLOC_SAMPLE_BYTES");
    if (every) {
        long long b = atoll(every);
        if (b >= 1 && b <= (1LL << 40))
            sample_bytes = b;
    }
    atomic_store(&snapshot_at, (uint64_t)sample_bytes);
    Dl_info info;
    if (dladdr((void *)&init, &info) && info.dli_fbase) {
        self_lo = (uintptr_t)info.dli_fbase;
        self_hi = (uintptr_t)&boot; /* text comes before data */
    }
    size_t counts_bytes = sizeof(struct counts) * SLOTS;
    void *m = real_mmap(NULL, counts_bytes + sizeof(struct stack) * STACKS + sizeof(struct block) * LIVE,
                        PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        in_hook = 0;
        return; /* nothing recorded: the run's file is missing, and said so */
    }
    slots = m;
    stacks = (struct stack *)((char *)m + counts_bytes);
    blocks = (struct block *)((char *)stacks + sizeof(struct stack) * STACKS);
    /* backtrace() loads libgcc_s at its first call, allocating: now, not
     * inside a hook. */
    void *warm[4];
    backtrace(warm, 4);
    pthread_atfork(NULL, NULL, after_fork);
    pthread_key_create(&flush_key, thread_ends);
    start_ns = now_ns();
    enabled = 1;
    in_hook = 0;
}

__attribute__((destructor)) static void fini(void) {
    report();
}
