/* The floor of per-iteration cost: posix_spawn + wait4 in a tight C loop,
 * with stdin/stdout/stderr on /dev/null like a benchmark runner's default. */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s N PROGRAM\n", argv[0]);
        return 2;
    }
    long n = atol(argv[1]);
    int devnull = open("/dev/null", O_RDWR);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, devnull, 0);
    posix_spawn_file_actions_adddup2(&fa, devnull, 1);
    posix_spawn_file_actions_adddup2(&fa, devnull, 2);
    char *child_argv[] = {argv[2], NULL};
    for (long i = 0; i < n; i++) {
        pid_t pid;
        if (posix_spawn(&pid, argv[2], &fa, NULL, child_argv, environ) != 0) {
            perror("posix_spawn");
            return 1;
        }
        int status;
        struct rusage ru;
        if (wait4(pid, &status, 0, &ru) != pid) {
            perror("wait4");
            return 1;
        }
    }
    return 0;
}
