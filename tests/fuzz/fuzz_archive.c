/* Fuzzes archive extraction (common/archive.c: tony_archive_extract), which
 * every task runs on the job's source zip, venv.zip and '#archive'
 * resources. Each input is unpacked into a fresh dir inside a sandbox dir.
 * Properties: no crash, leak or UB; nothing lands outside the target dir:
 * the sandbox holds nothing but the input and the target dir afterwards,
 * and no entry's path, taken as written or through the links the archive
 * made, names a file outside the target dir that changed while it ran, or
 * a dir there that was not there before. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/archive.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet();
    return 0;
}

/* Where each entry would land if written naively: its name under dir, or
 * the name itself when absolute. */
static void entry_paths(const char *archive_path, const char *dir, tony_strv *out) {
    struct archive *a = archive_read_new();
    archive_read_support_format_zip(a);
    archive_read_support_format_tar(a);
    archive_read_support_format_gnutar(a);
    archive_read_support_filter_gzip(a);
    archive_read_support_filter_none(a);
    if (archive_read_open_filename(a, archive_path, 64 * 1024) == ARCHIVE_OK) {
        struct archive_entry *e;
        for (int i = 0; i < 4096 && archive_read_next_header(a, &e) >= ARCHIVE_WARN; i++) {
            const char *names[] = {archive_entry_pathname(e), archive_entry_hardlink(e)};
            for (size_t k = 0; k < 2; k++) {
                if (!names[k] || !*names[k]) continue;
                char *p = names[k][0] == '/' ? tony_strdup(names[k]) : tony_path_join(dir, names[k]);
                tony_strv_push(out, p);
                free(p);
            }
        }
    }
    archive_read_free(a);
}

/* The real place a path names, resolving the links of its parent (which
 * the archive may have made); NULL when the parent does not exist. */
static char *resolved(const char *path) {
    char *copy = tony_strdup(path);
    char *slash = strrchr(copy, '/');
    char *out = NULL;
    if (slash && slash[1]) {
        *slash = '\0';
        char *parent = realpath(*copy ? copy : "/", NULL);
        if (parent) out = tony_path_join(parent, slash + 1);
        free(parent);
    }
    free(copy);
    return out;
}

static bool inside(const char *path, const char *root) {
    size_t n = strlen(root);
    return strncmp(path, root, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *scratch = fuzz_scratch();
    char *sandbox = tony_path_join(scratch, "sandbox");
    char *out = tony_path_join(sandbox, "out");
    tony_error err;
    tony_rm_rf(sandbox, &err);
    FUZZ_CHECK(tony_mkdir_p(sandbox, 0700, &err) == 0, "%s", err.msg);
    char *in = tony_path_join(sandbox, "in.archive");
    FUZZ_CHECK(tony_write_file(in, (const char *)data, size, 0600, &err) == 0, "%s", err.msg);

    /* Lexically outside paths the entries name, and whether each was there. */
    tony_strv paths = {0};
    entry_paths(in, out, &paths);
    bool *before = tony_xcalloc(paths.len + 1, sizeof *before);
    for (size_t i = 0; i < paths.len; i++) before[i] = exists(paths.items[i]);

    /* File times are the file system's clock (coarse): take it from a
     * file written now rather than from clock_gettime. */
    struct timespec t0;
    struct stat st0;
    FUZZ_CHECK(stat(in, &st0) == 0, "the input is gone");
    t0 = st0.st_ctim;
    tony_archive_extract(in, out, &err);

    /* The sandbox: the input and the target dir, nothing else. */
    DIR *d = opendir(sandbox);
    FUZZ_CHECK(d != NULL, "the sandbox is gone");
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        FUZZ_CHECK(!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "in.archive") || !strcmp(n, "out"),
                   "extraction made '%s' beside its target dir", n);
    }
    closedir(d);
    char *root = realpath(out, NULL);
    for (size_t i = 0; root && i < paths.len; i++) {
        const char *p = paths.items[i];
        char *real = resolved(p);
        const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
        struct stat st;
        /* A file outside the target changed since extraction began: a write
         * through a ".." or an absolute name or a link the archive made. */
        if (real && strcmp(base, ".") && strcmp(base, "..") && strcmp(real, in) && !inside(real, root) &&
            lstat(real, &st) == 0 &&
            !S_ISDIR(st.st_mode))
            FUZZ_CHECK(st.st_ctim.tv_sec < t0.tv_sec ||
                           (st.st_ctim.tv_sec == t0.tv_sec && st.st_ctim.tv_nsec < t0.tv_nsec),
                       "extraction wrote %s (entry path %s), outside %s", real, p, out);
        /* A dir outside the target that was not there before. */
        if (real && strcmp(base, ".") && strcmp(base, "..") && !inside(real, root) && !inside(p, out))
            FUZZ_CHECK(before[i] || !exists(p), "extraction made %s, outside %s", p, out);
        free(real);
    }
    free(root);
    free(before);
    tony_strv_free(&paths);
    tony_rm_rf(sandbox, &err);
    free(in);
    free(out);
    free(sandbox);
    return 0;
}
