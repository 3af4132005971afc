/* I/O-touching: writes CHUNK-byte blocks to an unlinked temporary file
 * (pwrite, cycling over a 1 MiB region), then reads the same number of
 * blocks back (pread) and checksums them. No fsync: this measures the
 * system-call and page-cache path, which is what most programs' file I/O
 * costs on a warm machine. The small region keeps the one-off cost of
 * allocating the file's pages (not scaled by SLOWDOWN) small. The file
 * lives in $TMPDIR (default /tmp).
 * One unit of work = one block written and one block read. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include "common.h"

#define BASE_DEFAULT 9400LL
#define CHUNK (16 * 1024)
#define REGION_BLOCKS (1024 * 1024 / CHUNK)

int main(int argc, char **argv) {
    long long n = work_units(argc, argv, BASE_DEFAULT);
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/perfsleuth-io-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) { perror("mkstemp"); return 1; }
    unlink(path);
    static unsigned char buf[CHUNK];
    unsigned long long s = 777, sum = 0;
    for (size_t k = 0; k < CHUNK; k += 8) { unsigned long long v = lcg(&s); memcpy(buf + k, &v, 8); }
    for (long long i = 0; i < n; i++) {
        buf[i % CHUNK] ^= (unsigned char)i;
        off_t off = (off_t)(i % REGION_BLOCKS) * CHUNK;
        if (pwrite(fd, buf, CHUNK, off) != CHUNK) { perror("pwrite"); return 1; }
    }
    for (long long i = 0; i < n; i++) {
        off_t off = (off_t)(i % REGION_BLOCKS) * CHUNK;
        if (pread(fd, buf, CHUNK, off) != CHUNK) { perror("pread"); return 1; }
        sum += buf[(i * 131) % CHUNK];
    }
    close(fd);
    printf("%llu\n", sum);
    return 0;
}
