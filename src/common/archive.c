/* Archives with libarchive: zipping the client's src dir for staging, and
 * unpacking zip / tar / tar.gz resources into a task's work dir without ever
 * writing outside it. Errors name the archive and the entry involved. */
#include "common/archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/strv.h"

bool tony_archive_is_archive(const char *path) {
    unsigned char b[262] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    /* zip: local file header, end of central directory (an empty zip), or
     * the spanning marker. */
    if (n >= 4 && b[0] == 'P' && b[1] == 'K' &&
        ((b[2] == 3 && b[3] == 4) || (b[2] == 5 && b[3] == 6) || (b[2] == 7 && b[3] == 8)))
        return true;
    if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) return true; /* gzip (tar.gz) */
    if (n >= 262 && memcmp(b + 257, "ustar", 5) == 0) return true; /* POSIX / GNU tar */
    return false;
}

/* ---- zip ---------------------------------------------------------------- */

/* An archive being written: a zip of a dir, or a tar.gz of named files. */
typedef struct zip_ctx {
    struct archive *a;
    const char *zip_path;
    dev_t zip_dev; /* the zip being written, so that a zip inside dir skips itself */
    ino_t zip_ino;
    char buf[64 * 1024];
} zip_ctx;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int zip_file(zip_ctx *z, const char *full, const char *rel, const struct stat *st, tony_error *err) {
    int fd = open(full, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return tony_err(err, "cannot read %s to put it into %s: %s", full, z->zip_path, strerror(errno));
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, rel);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, st->st_mode & 07777); /* keeps the exec bit of scripts */
    archive_entry_set_size(e, st->st_size);
    archive_entry_set_mtime(e, st->st_mtime, 0);
    int rc = 0;
    if (archive_write_header(z->a, e) != ARCHIVE_OK) {
        rc = tony_err(err, "cannot add %s to %s: %s", full, z->zip_path, archive_error_string(z->a));
        goto out;
    }
    for (;;) {
        ssize_t n = read(fd, z->buf, sizeof z->buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            rc = tony_err(err, "cannot read %s to put it into %s: %s", full, z->zip_path, strerror(errno));
            goto out;
        }
        if (n == 0) break;
        if (archive_write_data(z->a, z->buf, (size_t)n) != n) {
            rc = tony_err(err, "cannot add %s to %s: %s", full, z->zip_path, archive_error_string(z->a));
            goto out;
        }
    }
out:
    archive_entry_free(e);
    close(fd);
    return rc;
}

/* Walks dir in name order (stable zips for the same tree). Directories are
 * not followed through symlinks, so a link loop cannot recurse forever; a
 * symlink to a regular file is zipped as that file. */
static int zip_walk(zip_ctx *z, const char *dir, const char *rel, tony_error *err) {
    DIR *d = opendir(dir);
    if (!d) return tony_err(err, "cannot list %s to zip it into %s: %s", dir, z->zip_path, strerror(errno));
    tony_strv names = {0};
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) tony_strv_push(&names, de->d_name);
    closedir(d);
    if (names.len) qsort(names.items, names.len, sizeof names.items[0], cmp_str);

    int rc = 0;
    for (size_t i = 0; i < names.len && rc == 0; i++) {
        char *full = tony_path_join(dir, names.items[i]);
        char *r = rel ? tony_sprintf("%s/%s", rel, names.items[i]) : tony_strdup(names.items[i]);
        struct stat lst, st;
        if (lstat(full, &lst) < 0) {
            rc = tony_err(err, "cannot stat %s to zip it into %s: %s", full, z->zip_path, strerror(errno));
        } else if (S_ISDIR(lst.st_mode)) {
            rc = zip_walk(z, full, r, err);
        } else if (stat(full, &st) == 0 && S_ISREG(st.st_mode) &&
                   !(st.st_dev == z->zip_dev && st.st_ino == z->zip_ino)) {
            rc = zip_file(z, full, r, &st, err);
        }
        /* else: sockets, fifos, dangling or directory links: not staged */
        free(full);
        free(r);
    }
    tony_strv_free(&names);
    return rc;
}

int tony_archive_zip_dir(const char *dir, const char *zip_path, tony_error *err) {
    if (!tony_is_dir(dir)) return tony_err(err, "cannot zip %s: not a directory", dir);
    zip_ctx *z = tony_xcalloc(1, sizeof *z);
    z->zip_path = zip_path;
    z->a = archive_write_new();
    int rc = 0;
    if (archive_write_set_format_zip(z->a) != ARCHIVE_OK ||
        archive_write_open_filename(z->a, zip_path) != ARCHIVE_OK) {
        rc = tony_err(err, "cannot create %s: %s", zip_path, archive_error_string(z->a));
        archive_write_free(z->a);
        free(z);
        return rc;
    }
    struct stat st;
    if (stat(zip_path, &st) == 0) {
        z->zip_dev = st.st_dev;
        z->zip_ino = st.st_ino;
    }
    rc = zip_walk(z, dir, NULL, err);
    if (archive_write_close(z->a) != ARCHIVE_OK && rc == 0)
        rc = tony_err(err, "cannot finish %s: %s", zip_path, archive_error_string(z->a));
    archive_write_free(z->a);
    free(z);
    if (rc < 0) unlink(zip_path); /* no half-written zip left to be staged */
    return rc;
}

/* ---- tar.gz of named files ----------------------------------------------- */

int tony_archive_write_tgz(const char *out, const tony_archive_member *members, size_t n, tony_error *err) {
    zip_ctx *z = tony_xcalloc(1, sizeof *z);
    z->zip_path = out;
    z->a = archive_write_new();
    int rc = 0;
    if (archive_write_set_format_pax_restricted(z->a) != ARCHIVE_OK || archive_write_add_filter_gzip(z->a) != ARCHIVE_OK ||
        archive_write_open_filename(z->a, out) != ARCHIVE_OK)
        rc = tony_err(err, "cannot create %s: %s", out, archive_error_string(z->a));
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct stat st;
        if (stat(members[i].path, &st) < 0)
            rc = tony_err(err, "cannot put %s into %s: %s", members[i].path, out, strerror(errno));
        else if (!S_ISREG(st.st_mode))
            rc = tony_err(err, "cannot put %s into %s: not a regular file", members[i].path, out);
        else
            rc = zip_file(z, members[i].path, members[i].name, &st, err);
    }
    if (archive_write_close(z->a) != ARCHIVE_OK && rc == 0)
        rc = tony_err(err, "cannot finish %s: %s", out, archive_error_string(z->a));
    archive_write_free(z->a);
    free(z);
    if (rc < 0) unlink(out);
    return rc;
}

/* ---- extract ------------------------------------------------------------ */

/* An entry may only name a place under the target dir: no absolute path and
 * no ".." component. libarchive's ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS
 * cannot be used here because the entry is rebased onto dir (an absolute
 * path) before it is written, hence this check of the name as archived. */
static bool entry_path_ok(const char *p) {
    if (!p || !*p || p[0] == '/') return false;
    const char *s = p;
    while (*s) {
        const char *slash = strchr(s, '/');
        size_t n = slash ? (size_t)(slash - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.') return false;
        if (!slash) break;
        s = slash + 1;
    }
    return true;
}

static int copy_data(struct archive *in, struct archive *out, const char *archive_path, const char *entry,
                     tony_error *err) {
    for (;;) {
        const void *buf;
        size_t size;
        la_int64_t off;
        int r = archive_read_data_block(in, &buf, &size, &off);
        if (r == ARCHIVE_EOF) return 0;
        if (r < ARCHIVE_WARN)
            return tony_err(err, "cannot read entry '%s' of %s: %s", entry, archive_path, archive_error_string(in));
        if (archive_write_data_block(out, buf, size, off) < ARCHIVE_WARN)
            return tony_err(err, "cannot write entry '%s' of %s: %s", entry, archive_path, archive_error_string(out));
    }
}

int tony_archive_extract(const char *archive_path, const char *dir, tony_error *err) {
    /* dir's last component is not resolved below on purpose: a link there
     * (planted by an earlier archive) would take every entry elsewhere. */
    struct stat st;
    if (lstat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return tony_err(err, "refusing to unpack %s into %s: that is %s, not a directory, and unpacking through it "
                        "could write outside the work dir", archive_path, dir,
                        S_ISLNK(st.st_mode) ? "a symlink" : "a file");
    if (tony_mkdir_p(dir, 0755, err) < 0) return tony_err_wrap(err, "cannot unpack %s", archive_path);
    /* Entries are rebased onto the real path of dir: SECURE_SYMLINKS checks
     * every component of the path it is given, so a symlink in dir's own
     * path (a work dir under a linked /tmp) must be resolved first. */
    char *root = realpath(dir, NULL);
    if (!root) return tony_err(err, "cannot unpack %s into %s: %s", archive_path, dir, strerror(errno));

    struct archive *in = archive_read_new();
    archive_read_support_format_zip(in);
    archive_read_support_format_tar(in);
    archive_read_support_format_gnutar(in);
    archive_read_support_filter_gzip(in);
    archive_read_support_filter_none(in);

    /* PERM keeps modes (exec bits of scripts, venv/bin). SECURE_NODOTDOT and
     * SECURE_SYMLINKS stop a ".." or a symlink planted by an earlier entry
     * from taking a write outside dir, on top of entry_path_ok. */
    struct archive *out = archive_write_disk_new();
    archive_write_disk_set_options(out, ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
                                            ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_SYMLINKS);
    archive_write_disk_set_standard_lookup(out);

    int rc = 0;
    if (archive_read_open_filename(in, archive_path, 64 * 1024) != ARCHIVE_OK) {
        rc = tony_err(err, "cannot open archive %s: %s", archive_path, archive_error_string(in));
        goto out;
    }
    for (;;) {
        struct archive_entry *e;
        int r = archive_read_next_header(in, &e);
        if (r == ARCHIVE_EOF) break;
        if (r < ARCHIVE_WARN) {
            rc = tony_err(err, "cannot read %s as a zip, tar or tar.gz archive: %s", archive_path,
                          archive_error_string(in));
            break;
        }
        char *name = tony_strdup(archive_entry_pathname(e));
        /* "./" is what tar writes for the archive's own top dir. */
        if (!name || strcmp(name, ".") == 0 || strcmp(name, "./") == 0) {
            free(name);
            continue;
        }
        if (!entry_path_ok(name)) {
            rc = tony_err(err, "refusing to unpack %s: entry '%s' would land outside %s", archive_path, name, dir);
            free(name);
            break;
        }
        const char *link = archive_entry_hardlink(e);
        if (link) {
            if (!entry_path_ok(link)) {
                rc = tony_err(err, "refusing to unpack %s: entry '%s' is a hard link to '%s', outside %s",
                              archive_path, name, link, dir);
                free(name);
                break;
            }
            char *target = tony_path_join(root, link);
            archive_entry_set_hardlink(e, target);
            free(target);
        }
        char *dest = tony_path_join(root, name);
        archive_entry_set_pathname(e, dest);
        free(dest);
        if (archive_write_header(out, e) < ARCHIVE_WARN) {
            rc = tony_err(err, "cannot unpack entry '%s' of %s into %s: %s", name, archive_path, dir,
                          archive_error_string(out));
        } else {
            rc = copy_data(in, out, archive_path, name, err);
        }
        if (rc == 0 && archive_write_finish_entry(out) < ARCHIVE_WARN)
            rc = tony_err(err, "cannot unpack entry '%s' of %s into %s: %s", name, archive_path, dir,
                          archive_error_string(out));
        free(name);
        if (rc < 0) break;
    }
out:
    archive_read_free(in);
    archive_write_free(out);
    free(root);
    return rc;
}
