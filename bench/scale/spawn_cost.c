/* What starting a container costs the coordinator, fork+exec against
 * posix_spawn (issue 26, common/proc.c): a process with MB megabytes
 * touched (the coordinator's RSS at 2,000 tasks is ~260 MB) starts N
 * sleeping sessions each way and prints the wall time and its own CPU.
 * usage: cc -O2 bench/scale/spawn_cost.c -o spawn_cost && ./spawn_cost 260 1000 */
#define _GNU_SOURCE
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MB N\n", argv[0]);
        return 2;
    }
    size_t mb = (size_t)atoi(argv[1]);
    int n = atoi(argv[2]);
    char *m = malloc(mb << 20);
    memset(m, 1, mb << 20);
    pid_t *p = calloc((size_t)n, sizeof *p);
    char *av[] = {"sleep", "100", NULL};
    for (int mode = 0; mode < 2; mode++) {
        double t0 = now(), c0 = (double)clock() / CLOCKS_PER_SEC;
        for (int i = 0; i < n; i++) {
            if (mode == 0) {
                p[i] = fork();
                if (p[i] == 0) {
                    setsid();
                    execvp("sleep", av);
                    _exit(127);
                }
            } else {
                posix_spawnattr_t a;
                posix_spawnattr_init(&a);
                posix_spawnattr_setflags(&a, POSIX_SPAWN_SETSID);
                posix_spawnp(&p[i], "sleep", NULL, &a, av, environ);
                posix_spawnattr_destroy(&a);
            }
        }
        printf("%s: %d starts with %zu MB touched: %.2f s wall, %.2f s CPU of the starting process\n",
               mode ? "posix_spawn" : "fork+exec", n, mb, now() - t0, (double)clock() / CLOCKS_PER_SEC - c0);
        for (int i = 0; i < n; i++) {
            kill(p[i], SIGKILL);
            waitpid(p[i], NULL, 0);
        }
    }
    free(p);
    free(m);
    return 0;
}
