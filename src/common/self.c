/* Where this tony is and how to pack it (see self.h): the layout of a
 * self-contained tony is known here and in the launcher only. */
#include "common/self.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/archive.h"
#include "common/fs.h"
#include "common/strv.h"

#define SELF_LIBDIR "lib/tony"
#define SELF_LAUNCHER "bin/tony"
#define SELF_PROGRAM "tony"
/* What a plain build has beside the program (CMakeLists.txt): the launcher,
 * and libraries to pack in place of the loaded ones of the same name (an
 * empty ICU data library). */
#define SELF_BUILT_LAUNCHER "tony-launcher"
#define SELF_BUILT_INSTEAD "pack-instead"

static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? tony_sprintf("%.*s", (int)(slash - path), path) : tony_strdup(".");
}

static bool is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int tony_self_find(tony_self *s, tony_error *err) {
    memset(s, 0, sizeof *s);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return tony_err(err, "cannot find the tony binary (/proc/self/exe): %s; is /proc mounted?", strerror(errno));
    exe[n] = '\0';
    /* Run by the launcher, this process's executable is the shipped loader:
     * <root>/lib/tony/ld-linux-x86-64.so.2 beside <root>/lib/tony/tony. */
    char *libdir = dir_of(exe);
    char *program = tony_path_join(libdir, SELF_PROGRAM);
    char *root = tony_sprintf("%s/../..", libdir);
    char *launcher = tony_path_join(root, SELF_LAUNCHER);
    if (tony_str_starts_with(tony_basename(exe), "ld-") && is_file(program) && is_file(launcher)) {
        char real[PATH_MAX];
        s->root = tony_strdup(realpath(root, real) ? real : root);
        s->program = program;
        s->command = tony_path_join(s->root, SELF_LAUNCHER);
        program = NULL;
    } else {
        s->program = tony_strdup(exe);
        s->command = tony_strdup(exe);
    }
    free(libdir);
    free(program);
    free(root);
    free(launcher);
    return 0;
}

void tony_self_free(tony_self *s) {
    free(s->program);
    free(s->command);
    free(s->root);
    memset(s, 0, sizeof *s);
}

/* Fields 48 and 49 of /proc/self/stat: where the kernel keeps argv's
 * strings (Linux 3.5 and later). */
static int arg_area(char **start, char **end) {
    char *stat = NULL;
    size_t len = 0;
    if (tony_read_file("/proc/self/stat", &stat, &len, NULL)) return -1;
    int rc = -1;
    char *p = strrchr(stat, ')'); /* the command name may hold spaces */
    for (int field = 2; p && field < 48; field++) p = strchr(p + 1, ' ');
    unsigned long a = 0, b = 0;
    if (p && sscanf(p + 1, "%lu %lu", &a, &b) == 2 && a && b > a) {
        *start = (char *)a;
        *end = (char *)b;
        rc = 0;
    }
    free(stat);
    return rc;
}

void tony_self_tidy_cmdline(int argc, char **argv) {
    char *start, *end;
    if (argc < 1 || arg_area(&start, &end) || argv[0] == start) return;
    size_t total = 0;
    for (int i = 0; i < argc; i++) {
        if (argv[i] < start || argv[i] >= end) return; /* not the kernel's strings: leave them */
        total += strlen(argv[i]) + 1;
    }
    if (total > (size_t)(end - start)) return;
    char *copy = tony_xcalloc(1, total), *q = copy;
    for (int i = 0; i < argc; i++) q = stpcpy(q, argv[i]) + 1;
    memcpy(start, copy, total);
    memset(start + total, 0, (size_t)(end - start) - total);
    free(copy);
    for (int i = 0, off = 0; i < argc; i++) {
        argv[i] = start + off;
        off += (int)strlen(argv[i]) + 1;
    }
}

/* --- packing */

typedef struct pack_list {
    tony_strv paths, names;
} pack_list;

static void pack_add(pack_list *l, const char *path, const char *prefix, const char *name) {
    char *full = tony_sprintf("%s%s", prefix, name);
    bool seen = false; /* the same soname reached twice */
    for (size_t i = 0; i < l->names.len && !seen; i++) seen = strcmp(l->names.items[i], full) == 0;
    if (!seen) {
        tony_strv_push(&l->paths, path);
        tony_strv_push(&l->names, full);
    }
    free(full);
}

typedef struct loaded_ctx {
    pack_list *list;
    const char *prefix;
    const char *instead_dir;
} loaded_ctx;

/* Every shared object the process has loaded: its NEEDED libraries and the
 * loader. Entries without a path (the program, the vDSO) are skipped. */
static int on_loaded(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    loaded_ctx *c = arg;
    const char *path = info->dlpi_name;
    if (!path || path[0] != '/' || !is_file(path)) return 0;
    char *name = tony_sprintf(SELF_LIBDIR "/%s", tony_basename(path));
    char *instead = tony_path_join(c->instead_dir, tony_basename(path));
    pack_add(c->list, is_file(instead) ? instead : path, c->prefix, name);
    free(instead);
    free(name);
    return 0;
}

static int pack_tree(const tony_self *s, pack_list *l, const char *prefix, tony_error *err) {
    char *launcher = tony_path_join(s->root, SELF_LAUNCHER);
    pack_add(l, launcher, prefix, SELF_LAUNCHER);
    free(launcher);
    char *libdir = tony_path_join(s->root, SELF_LIBDIR);
    DIR *d = opendir(libdir);
    if (!d) {
        int rc = tony_err(err, "cannot list %s: %s", libdir, strerror(errno));
        free(libdir);
        return rc;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        char *path = tony_path_join(libdir, de->d_name);
        if (de->d_name[0] != '.' && is_file(path)) {
            char *name = tony_sprintf(SELF_LIBDIR "/%s", de->d_name);
            pack_add(l, path, prefix, name);
            free(name);
        }
        free(path);
    }
    closedir(d);
    free(libdir);
    return 0;
}

static int pack_build(const tony_self *s, pack_list *l, const char *prefix, tony_error *err) {
    char *bindir = dir_of(s->program);
    char *launcher = tony_path_join(bindir, SELF_BUILT_LAUNCHER);
    char *instead = tony_path_join(bindir, SELF_BUILT_INSTEAD);
    free(bindir);
    if (!is_file(launcher)) {
        free(instead);
        int rc = tony_err(err, "cannot pack a self-contained tony: %s is missing (it is built beside %s; run `make`)",
                          launcher, s->program);
        free(launcher);
        return rc;
    }
    pack_add(l, launcher, prefix, SELF_LAUNCHER);
    free(launcher);
    pack_add(l, s->program, prefix, SELF_LIBDIR "/" SELF_PROGRAM);
    loaded_ctx c = {l, prefix, instead};
    dl_iterate_phdr(on_loaded, &c);
    free(instead);
    return 0;
}

int tony_self_pack(const tony_self *s, const char *out, const char *prefix, tony_error *err) {
    pack_list l = {0};
    int rc = s->root ? pack_tree(s, &l, prefix, err) : pack_build(s, &l, prefix, err);
    if (rc == 0) {
        tony_archive_member *m = tony_xcalloc(l.paths.len + 1, sizeof *m);
        for (size_t i = 0; i < l.paths.len; i++) m[i] = (tony_archive_member){l.paths.items[i], l.names.items[i]};
        rc = tony_archive_write_tgz(out, m, l.paths.len, err);
        free(m);
    }
    tony_strv_free(&l.paths);
    tony_strv_free(&l.names);
    return rc;
}

int tony_self_build_id(const tony_self *s, char **out, tony_error *err) {
    int fd = open(s->program, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return tony_err(err, "cannot read %s: %s", s->program, strerror(errno));
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    unsigned char buf[64 * 1024];
    int rc = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            rc = tony_err(err, "cannot read %s: %s", s->program, strerror(errno));
            break;
        }
        if (n == 0) break;
        EVP_DigestUpdate(md, buf, (size_t)n);
    }
    close(fd);
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(md, digest, &len);
    EVP_MD_CTX_free(md);
    if (rc) return rc;
    char hex[17];
    for (int i = 0; i < 8; i++) snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    *out = tony_sprintf("%s-%s", TONY_VERSION, hex);
    return 0;
}

int tony_self_cached_tree(const tony_self *s, const char *cache_dir, char **dir, tony_error *err) {
    *dir = NULL;
    char *id = NULL;
    if (tony_self_build_id(s, &id, err)) return -1;
    char *tree = tony_sprintf("%s/tony-%s", cache_dir, id);
    char *bin = tony_path_join(tree, "bin/tony");
    int rc = 0;
    if (!tony_file_exists(bin)) {
        char *part = tony_sprintf("%s.%d", tree, (int)getpid());
        char *tgz = tony_sprintf("%s.tar.gz", part);
        rc = tony_mkdir_p(cache_dir, 0700, err);
        if (rc == 0) rc = tony_self_pack(s, tgz, "", err);
        if (rc == 0) rc = tony_archive_extract(tgz, part, err);
        if (rc == 0 && rename(part, tree) != 0 && !tony_file_exists(bin))
            rc = tony_err(err, "cannot put a self-contained tony at %s", tree);
        tony_rm_rf(part, NULL);
        unlink(tgz);
        free(part);
        free(tgz);
    }
    if (rc == 0) *dir = tony_strdup(tree);
    free(id);
    free(tree);
    free(bin);
    return rc;
}
