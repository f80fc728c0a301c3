/* bin/tony of a self-contained tony (see common/self.h for the layout). It is
 * linked statically, so it starts on any x86-64 Linux whatever its libraries,
 * and it only hands over: it runs lib/tony/tony through the loader shipped
 * beside it, with that directory as the only library path given, so neither
 * the host's glibc nor its other libraries are used. Nothing goes through the
 * environment (no LD_LIBRARY_PATH): what tony starts in turn, the user's
 * Python above all, sees the environment exactly as tony was given it. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The loader's file name in lib/tony: the one the program was linked against
 * (x86-64 glibc). */
#define LOADER "ld-linux-x86-64.so.2"

int main(int argc, char **argv) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "tony: cannot find where tony is installed (/proc/self/exe: %s); is /proc mounted?\n",
                strerror(errno));
        return 127;
    }
    self[n] = '\0';
    /* <root>/bin/tony -> <root> */
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(self, '/');
        if (!slash) break;
        *slash = '\0';
    }
    char libdir[PATH_MAX], loader[PATH_MAX], program[PATH_MAX];
    if (snprintf(libdir, sizeof libdir, "%s/lib/tony", self) >= (int)sizeof libdir ||
        snprintf(loader, sizeof loader, "%s/" LOADER, libdir) >= (int)sizeof loader ||
        snprintf(program, sizeof program, "%s/tony", libdir) >= (int)sizeof program) {
        fprintf(stderr, "tony: the install path %s is too long\n", self);
        return 127;
    }
    char **args = calloc((size_t)argc + 7, sizeof *args);
    if (!args) return 127;
    int k = 0;
    args[k++] = loader;
    args[k++] = "--library-path";
    args[k++] = libdir;
    args[k++] = "--argv0";
    args[k++] = argv[0] ? argv[0] : "tony";
    args[k++] = program;
    for (int i = 1; i < argc; i++) args[k++] = argv[i];
    args[k] = NULL;
    execv(loader, args);
    fprintf(stderr, "tony: cannot run %s: %s (is %s a complete tony install?)\n", loader, strerror(errno), self);
    return 127;
}
