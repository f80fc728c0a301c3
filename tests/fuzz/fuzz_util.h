/* What the libFuzzer harnesses of tests/fuzz share: a private scratch dir
 * for the files an input must become (the loaders under test read paths),
 * and FUZZ_CHECK, which turns a broken property into a crash libFuzzer
 * records. Header-only: each harness is one program. */
#ifndef TONY_FUZZ_UTIL_H
#define TONY_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fs.h"
#include "common/log.h"
#include "common/strv.h"
#include "conf/conf.h"

/* A property the code under test must keep; failing it is a finding. */
#define FUZZ_CHECK(cond, ...)                                                  \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz property broken at %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            abort();                                                           \
        }                                                                      \
    } while (0)

static char *fuzz_scratch_dir;

static void fuzz_scratch_remove(void) {
    if (!fuzz_scratch_dir) return;
    tony_error err;
    tony_rm_rf(fuzz_scratch_dir, &err);
    free(fuzz_scratch_dir);
    fuzz_scratch_dir = NULL;
}

/* This process's scratch dir (under $TMPDIR), removed at exit. */
static inline const char *fuzz_scratch(void) {
    if (fuzz_scratch_dir) return fuzz_scratch_dir;
    const char *tmp = getenv("TMPDIR");
    char *tmpl = tony_sprintf("%s/tony-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmpl)) {
        perror("mkdtemp");
        abort();
    }
    fuzz_scratch_dir = tmpl;
    atexit(fuzz_scratch_remove);
    return fuzz_scratch_dir;
}

/* Writes the input to <scratch>/name and returns that path (malloc'ed). */
static inline char *fuzz_write_input(const char *name, const uint8_t *data, size_t size) {
    char *path = tony_path_join(fuzz_scratch(), name);
    tony_error err;
    if (tony_write_file(path, (const char *)data, size, 0600, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        abort();
    }
    return path;
}

/* The code under test logs its errors; a fuzzer's millions of bad inputs
 * would drown the report in them. */
static inline void fuzz_quiet(void) {
    setenv("TONY_LOG_LEVEL", "error", 1);
    tony_log_init("fuzz", fopen("/dev/null", "w"));
}

/* A TensorFlow job of 1 ps and 2 workers running `python train.py`, with
 * the defaults under it: the job the harnesses that need a plan fuzz
 * against; more keys are the caller's to add. */
static inline tony_conf *fuzz_tf_conf(void) {
    tony_conf *conf = tony_conf_new();
    tony_conf_load_defaults(conf);
    tony_conf_set(conf, "tony.ps.instances", "1", "fuzz");
    tony_conf_set(conf, "tony.worker.instances", "2", "fuzz");
    tony_conf_set(conf, "tony.worker.command", "python train.py", "fuzz");
    tony_conf_set(conf, "tony.ps.command", "python train.py", "fuzz");
    tony_conf_set(conf, "tony.application.framework", "tensorflow", "fuzz");
    return conf;
}

/* The next line of [*p, end), without its "\r\n" or "\n" (malloc'ed);
 * NULL at the end. For the harnesses whose input is lines of a request. */
static inline char *fuzz_next_line(const char **p, const char *end) {
    if (*p >= end) return NULL;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    const char *stop = nl ? nl : end;
    size_t n = (size_t)(stop - *p);
    if (n && (*p)[n - 1] == '\r') n--;
    char *s = tony_sprintf("%.*s", (int)n, *p);
    *p = nl ? nl + 1 : end;
    return s;
}

#endif
