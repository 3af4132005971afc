// C++ allocations: `new` and a growing std::vector, through operator new
// and the C library's malloc underneath.
#include <cstdio>
#include <cstdlib>
#include <vector>

struct Widget {
    long id;
    char name[40];
};

__attribute__((noinline)) Widget *make_widget(long i) {
    Widget *w = new Widget();
    w->id = i;
    return w;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? std::atol(argv[1]) : 1000;
    std::vector<Widget *> all;
    for (long i = 0; i < n; i++)
        all.push_back(make_widget(i));
    long sum = 0;
    for (Widget *w : all) {
        sum += w->id;
        delete w;
    }
    std::printf("%ld\n", sum);
}
