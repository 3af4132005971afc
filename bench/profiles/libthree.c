/* three.c's functions in a shared library (libthree.so), for the profile
 * studies' shared-library case; main_three.c calls them. */
#ifndef ALPHA
#define ALPHA 100
#endif
#ifndef BETA
#define BETA 100
#endif

static volatile unsigned long sink;

#define LOOP(n)                                                  \
    do {                                                         \
        unsigned long x = sink;                                  \
        for (unsigned long i = 0; i < (n); i++)                  \
            x = x * 6364136223846793005UL + i;                   \
        sink = x;                                                \
    } while (0)

void lib_alpha(unsigned long n) { LOOP(n * ALPHA / 100); }
void lib_beta(unsigned long n) { LOOP(n * BETA / 100); }
void lib_gamma(unsigned long n) { LOOP(n); }
