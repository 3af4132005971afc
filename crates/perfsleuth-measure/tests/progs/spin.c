/* Runs an empty loop N times (argv[1]); the compiler may not remove it. */
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 0;
    for (long i = 0; i < n; i++)
        __asm__ volatile("" ::: "memory");
    return 0;
}
