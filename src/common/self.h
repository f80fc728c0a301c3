/* Where this tony is, how to run it again, and how to pack it into one
 * archive that runs on a node that has none of its libraries.
 *
 * A self-contained tony (`make dist`, the wheel, the .deb, and what the yarn
 * backend localizes) is a directory tree:
 *   bin/tony                        the launcher (src/launcher/): static, runs
 *                                   the program through the loader below
 *   lib/tony/tony                   the program
 *   lib/tony/ld-linux-x86-64.so.2   the loader it was linked against
 *   lib/tony/lib*.so.*              every library it loads, glibc included
 * Inside it /proc/self/exe is the loader, so running tony again (the
 * coordinator, an executor) must go through bin/tony: tony_self says what to
 * exec either way. */
#ifndef TONY_SELF_H
#define TONY_SELF_H

#include "common/error.h"

/* TONY_VERSION comes from CMake's project(VERSION). */
#ifndef TONY_VERSION
#define TONY_VERSION "0.0.0"
#endif

typedef struct tony_self {
    char *program; /* the tony ELF itself */
    char *command; /* what to exec to run tony again: bin/tony, or the program */
    char *root;    /* the self-contained tree's top, NULL for a plain build */
} tony_self;

int tony_self_find(tony_self *s, tony_error *err);
void tony_self_free(tony_self *s);

/* Run through the launcher, the kernel's view of this process's command line
 * (/proc/<pid>/cmdline, what ps and pgrep show) starts with the loader and
 * its options. This rewrites it in place to argv (argv[0] being the name
 * the launcher was run by), as nginx's setproctitle does, and points argv at
 * the rewritten strings. Nothing happens when argv already starts there. */
void tony_self_tidy_cmdline(int argc, char **argv);

/* Writes a self-contained tony as a gzip'ed tar to out, every path under
 * prefix ("" or "tony-1.2.3/"). From a self-contained tony that is its own
 * tree; from a plain build it is assembled from the program, the
 * `tony-launcher` built beside it and every shared object the running
 * process has loaded (the loader included), which are exactly the ones the
 * program needs; a library of the same name in pack-instead/ beside it
 * (ICU's data, emptied) is packed in place of the loaded one. */
int tony_self_pack(const tony_self *s, const char *out, const char *prefix, tony_error *err);

/* A name for this build, "<version>-<16 hex digits of the program's
 * SHA-256>": two builds share it only when their programs are the same
 * bytes. malloc'ed. */
int tony_self_build_id(const tony_self *s, char **out, tony_error *err);

/* This build's self-contained tree in cache_dir, tony-<build id>: packed
 * and unpacked there by the first caller (into a name of its own, then
 * renamed, so that a concurrent one's whole tree wins), reused after.
 * *dir malloc'ed; its bin/tony is what to run. */
int tony_self_cached_tree(const tony_self *s, const char *cache_dir, char **dir, tony_error *err);

#endif
