/* Prints a C program with N functions of K statements each (defaults 6000
 * and 40), for bench/callgrind_parse.sh: run under callgrind with
 * --dump-instr=yes --compress-pos=no --collect-jumps=yes it gives a
 * callgrind file of ~60 MB with a realistic mix of cost, call and jump
 * lines. Usage: gen_big [N [K]] > big.c */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 6000;
    int k = argc > 2 ? atoi(argv[2]) : 40;
    printf("#include <stdio.h>\n");
    for (int h = 0; h < 16; h++)
        printf("static long helper_%d(long x) {\n  return x * %d + (x >> %d);\n}\n", h, 2 * h + 3, h % 7 + 1);
    for (int i = 0; i < n; i++) {
        printf("static long f_%d(long x) {\n", i);
        for (int s = 0; s < k; s++) {
            int c = (i * 131 + s * 17) % 1000 + 1;
            switch (s % 4) {
            case 0: printf("  x = x * %d + %d;\n", c, s); break;
            case 1: printf("  if (x & %d) x ^= %d;\n  else x += %d;\n", 1 << (s % 5), c, s); break;
            case 2: printf("  x = helper_%d(x);\n", (i + s) % 16); break;
            default: printf("  x -= (x >> %d) + %d;\n", s % 13 + 1, c); break;
            }
        }
        printf("  return x;\n}\n");
    }
    printf("static long (*const fs[])(long) = {\n");
    for (int i = 0; i < n; i++) printf("  f_%d,\n", i);
    printf("};\n");
    printf("int main(void) {\n  long s = 1;\n"
           "  for (int r = 0; r < 3; r++)\n"
           "    for (unsigned i = 0; i < sizeof fs / sizeof fs[0]; i++) s = fs[i](s);\n"
           "  printf(\"%%ld\\n\", s);\n  return 0;\n}\n");
    return 0;
}
