/* One allocation: built -static, a program no library can be preloaded into. */
#include <stdlib.h>
int main(void) { return malloc(10) == 0; }
