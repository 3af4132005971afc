/* Calls libthree.so's functions as three.c calls its own. */
#include <stdlib.h>

void lib_alpha(unsigned long n);
void lib_beta(unsigned long n);
void lib_gamma(unsigned long n);

__attribute__((noinline)) void work(unsigned long a, unsigned long b, unsigned long c) {
    for (int slice = 0; slice < 20; slice++) {
        lib_alpha(a / 20);
        lib_beta(b / 20);
        lib_gamma(c / 20);
    }
}

int main(int argc, char **argv) {
    unsigned long m = 1000000UL;
    unsigned long a = argc > 1 ? strtoul(argv[1], 0, 10) : 40;
    unsigned long b = argc > 2 ? strtoul(argv[2], 0, 10) : 30;
    unsigned long c = argc > 3 ? strtoul(argv[3], 0, 10) : 30;
    work(a * m, b * m, c * m);
    return 0;
}
