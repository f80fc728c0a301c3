/* fs helpers; errors name the path and the system's reason. */
#include "common/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/strv.h"

/* Gives a directory this call just made its mode whatever the umask (a
 * umask of 000 must not leave it group- or world-writable); through a
 * descriptor, so that nothing swapped in at that name is changed. */
static void set_made_mode(const char *path, int mode) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_uid == geteuid()) (void)!fchmod(fd, (mode_t)mode);
    close(fd);
}

int tony_mkdir_p(const char *path, int mode, tony_error *err) {
    char *p = tony_strdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(p, (mode_t)mode) == 0) {
            set_made_mode(p, mode);
        } else if (errno != EEXIST) {
            int e = errno;
            free(p);
            return tony_err(err, "cannot create directory %s: %s", path, strerror(e));
        }
        *s = '/';
    }
    int rc = 0;
    if (mkdir(p, (mode_t)mode) == 0) set_made_mode(p, mode);
    else if (errno != EEXIST) rc = tony_err(err, "cannot create directory %s: %s", path, strerror(errno));
    free(p);
    return rc;
}

void tony_fs_whose(const struct stat *st, char *out, size_t n) {
    struct passwd pw, *found = NULL;
    char buf[1024];
    if (getpwuid_r(st->st_uid, &pw, buf, sizeof buf, &found) == 0 && found)
        snprintf(out, n, "%s's, mode %04o", found->pw_name, (unsigned)(st->st_mode & 07777));
    else
        snprintf(out, n, "uid %u's, mode %04o", (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777));
}

/* Whether someone but st's owner (and root) may write it. Group write is
 * the owner's alone where the group is the owner's private one (a group
 * of the owner's name with no other members: Debian's and Ubuntu's
 * user-private groups, where a umask of 002 makes every file 0664). */
static bool others_may_write(const struct stat *st) {
    if (st->st_mode & 0002) return true;
    if (!(st->st_mode & 0020)) return false;
    struct passwd pw, *user = NULL;
    struct group gr, *group = NULL;
    char pbuf[1024], gbuf[4096];
    if (getpwuid_r(st->st_uid, &pw, pbuf, sizeof pbuf, &user) || !user) return true;
    if (getgrgid_r(st->st_gid, &gr, gbuf, sizeof gbuf, &group) || !group) return true;
    bool private_group = user->pw_gid == st->st_gid && strcmp(group->gr_name, user->pw_name) == 0 &&
                         (!group->gr_mem || !group->gr_mem[0]);
    return !private_group;
}

int tony_fs_check_trusted(int fd, const char *path, const char *what, tony_error *err) {
    struct stat st;
    if (fstat(fd, &st)) return tony_err(err, "cannot stat %s: %s", path, strerror(errno));
    if ((st.st_uid == geteuid() || st.st_uid == 0) && !others_may_write(&st)) return 0;
    char whose[160];
    tony_fs_whose(&st, whose, sizeof whose);
    return tony_err(err, "%s %s is %s: %s; refused", what, path, whose,
                    st.st_uid != geteuid() && st.st_uid != 0 ? "another user's, who could make tony run anything as you"
                                                              : "others may write it and make tony run anything as you");
}

/* An existing directory above one tony makes for itself: nobody but its
 * owner may rename what is in it, or it is sticky (then nobody renames
 * another's entry: a shared tree's). Its owner may be anyone (a cluster's
 * daemon owns the dirs above a container's): one who could swap it could
 * as well have made it elsewhere. A symlink in a shared parent
 * (parent_shared: sticky and open to all) must be root's or ours, or its
 * owner could point it elsewhere at any time. */
static int check_ancestor(const char *path, const char *target, bool parent_shared, tony_error *err) {
    struct stat st, lst;
    if (lstat(path, &lst)) return tony_err(err, "cannot stat %s: %s", path, strerror(errno));
    if (stat(path, &st)) return tony_err(err, "cannot stat %s: %s", path, strerror(errno));
    char whose[160];
    if (parent_shared && S_ISLNK(lst.st_mode) && lst.st_uid != 0 && lst.st_uid != geteuid()) {
        tony_fs_whose(&lst, whose, sizeof whose);
        return tony_err(err, "cannot use %s: %s on the way is a symbolic link of another user (%s) in a shared "
                             "directory, who could point it anywhere; refused",
                        target, path, whose);
    }
    if (!S_ISDIR(st.st_mode)) return tony_err(err, "cannot create %s: %s is not a directory", target, path);
    if ((st.st_mode & S_ISVTX) || !others_may_write(&st)) return 0;
    tony_fs_whose(&st, whose, sizeof whose);
    return tony_err(err, "cannot use %s: %s on the way is %s, so other users could swap what tony makes in it; "
                         "refused (make it sticky as /tmp is, chmod +t %s, or writable by its owner only)",
                    target, path, whose, path);
}

/* Makes or checks (check_ancestor) each directory of the absolute path p
 * up to its last component (with it too when last), for shown. */
static int make_safe(char *p, const char *shown, int mode, bool last, tony_error *err) {
    int rc = 0;
    size_t len = strlen(p);
    while (len > 1 && p[len - 1] == '/') p[--len] = '\0';
    for (char *s = p + 1; rc == 0 && (*s || last); s++) {
        bool end = *s == '\0';
        if (*s != '/' && !end) continue;
        *s = '\0';
        /* A shared, sticky parent's child is shared as it is: another
         * user's job goes there too. */
        char *up = tony_strdup(p);
        char *slash = strrchr(up, '/');
        if (slash == up) slash[1] = '\0';
        else *slash = '\0';
        struct stat pst;
        bool shared = stat(up, &pst) == 0 && (pst.st_mode & S_ISVTX) && (pst.st_mode & 0002);
        free(up);
        if (mkdir(p, (mode_t)(shared ? 01777 : mode)) == 0) set_made_mode(p, shared ? 01777 : mode);
        else if (errno != EEXIST) rc = tony_err(err, "cannot create directory %s: %s", p, strerror(errno));
        else rc = check_ancestor(p, shown, shared, err);
        if (end) break;
        *s = '/';
    }
    return rc;
}

int tony_mkdir_safe(const char *path, int mode, tony_error *err) {
    char *p = tony_abspath(path);
    int rc = make_safe(p, path, mode, true, err);
    free(p);
    return rc;
}

int tony_mkdir_own(const char *path, int mode, tony_error *err) {
    char *p = tony_abspath(path);
    size_t len = strlen(p);
    while (len > 1 && p[len - 1] == '/') p[--len] = '\0';
    int rc = make_safe(p, path, mode, false, err);
    if (rc) {
        free(p);
        return rc;
    }
    bool made = mkdir(p, (mode_t)mode) == 0;
    if (!made && errno != EEXIST) {
        rc = tony_err(err, "cannot create directory %s: %s", p, strerror(errno));
        free(p);
        return rc;
    }
    /* What is at the name now, not a link it may have become. */
    int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        struct stat lst;
        if ((errno == ELOOP || errno == ENOTDIR) && lstat(p, &lst) == 0) {
            char whose[160];
            tony_fs_whose(&lst, whose, sizeof whose);
            rc = tony_err(err, "%s is already there and is %s (%s), not a directory this job made: refused "
                               "(another user may have planted it)",
                          p, S_ISLNK(lst.st_mode) ? "a symbolic link" : "not a directory", whose);
        } else {
            rc = tony_err(err, "cannot open directory %s: %s", p, strerror(errno));
        }
    } else if (fstat(fd, &st)) {
        rc = tony_err(err, "cannot stat %s: %s", p, strerror(errno));
    } else if (st.st_uid != geteuid() || others_may_write(&st)) {
        char whose[160];
        tony_fs_whose(&st, whose, sizeof whose);
        rc = tony_err(err, "%s is already there and is %s: not a directory of yours that only you may write; refused "
                           "(another user may have planted it)",
                      p, whose);
    } else if (made) {
        (void)!fchmod(fd, (mode_t)mode);
    }
    if (fd >= 0) close(fd);
    free(p);
    return rc;
}

int tony_fs_check_own_dir(const char *path, const char *what, tony_error *err) {
    struct stat st;
    if (lstat(path, &st)) return tony_err(err, "cannot stat %s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !others_may_write(&st)) return 0;
    char whose[160];
    tony_fs_whose(&st, whose, sizeof whose);
    if (!S_ISDIR(st.st_mode))
        return tony_err(err, "%s %s is %s (%s), not a directory: refused", what, path,
                        S_ISLNK(st.st_mode) ? "a symbolic link" : "not a directory", whose);
    return tony_err(err, "%s %s is %s: %s; refused (what is in it is not yours to trust: move it away and let tony "
                         "make its own)",
                    what, path, whose, st.st_uid != geteuid() ? "not yours" : "others may write it");
}

int tony_mkdir_within(const char *root, const char *rel, int mode, tony_error *err) {
    if (rel[0] == '/') return tony_err(err, "cannot create %s under %s: not a relative path", rel, root);
    char *path = tony_path_join(root, rel);
    size_t start = strlen(path) - strlen(rel);
    int rc = 0;
    /* Component by component below root: each must be made here or be a
     * real directory already; lstat never follows the last link. */
    for (size_t i = start; rc == 0; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        char c = path[i];
        path[i] = '\0';
        const char *comp = strrchr(path, '/');
        comp = comp ? comp + 1 : path;
        struct stat st;
        if (strcmp(comp, "..") == 0) {
            rc = tony_err(err, "cannot create %s under %s: '..' would leave it", rel, root);
        } else if (*comp && strcmp(comp, ".") != 0) {
            if (mkdir(path, (mode_t)mode) && errno != EEXIST)
                rc = tony_err(err, "cannot create directory %s: %s", path, strerror(errno));
            else if (lstat(path, &st))
                rc = tony_err(err, "cannot stat %s: %s", path, strerror(errno));
            else if (!S_ISDIR(st.st_mode))
                rc = tony_err(err, "cannot create %s under %s: %s is %s", rel, root, path,
                              S_ISLNK(st.st_mode) ? "a symlink" : "not a directory");
        }
        path[i] = c;
        if (c == '\0') break;
    }
    free(path);
    return rc;
}

int tony_rm_rf(const char *path, tony_error *err) {
    struct stat st;
    if (lstat(path, &st)) return errno == ENOENT ? 0 : tony_err(err, "cannot stat %s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (!d) return tony_err(err, "cannot open directory %s: %s", path, strerror(errno));
        struct dirent *de;
        int rc = 0;
        while (rc == 0 && (de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            char *child = tony_path_join(path, de->d_name);
            rc = tony_rm_rf(child, err);
            free(child);
        }
        closedir(d);
        if (rc) return rc;
        if (rmdir(path)) return tony_err(err, "cannot remove %s: %s", path, strerror(errno));
        return 0;
    }
    if (unlink(path)) return tony_err(err, "cannot remove %s: %s", path, strerror(errno));
    return 0;
}

bool tony_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool tony_file_exists(const char *path) { return access(path, F_OK) == 0; }

int tony_read_file(const char *path, char **out, size_t *len, tony_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return tony_err(err, "cannot read %s: %s", path, strerror(errno));
    tony_buf b = {0};
    tony_buf_puts(&b, "");
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) tony_buf_append(&b, chunk, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        tony_buf_free(&b);
        return tony_err(err, "cannot read %s: I/O error", path);
    }
    *out = b.data;
    if (len) *len = b.len;
    return 0;
}

static const char *file_kind(mode_t m) {
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

int tony_read_fd_capped(int fd, const char *path, size_t max, const char *what, char **out, size_t *len,
                        tony_error *err) {
    struct stat st;
    if (fstat(fd, &st) != 0) return tony_err(err, "cannot stat %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return tony_err(err, "%s is %s, not a regular file: refused as %s", path, file_kind(st.st_mode), what);
    if ((unsigned long long)st.st_size > max)
        return tony_err(err, "%s has %lld bytes: more than %s may have (%zu bytes); refused, not read", path,
                        (long long)st.st_size, what, max);
    tony_buf b = {0};
    tony_buf_puts(&b, "");
    long long size;
    /* at most max bytes even if it grows meanwhile */
    if (tony_read_range_fd(fd, path, 0, max, &b, &size, err)) {
        tony_buf_free(&b);
        return -1;
    }
    *out = b.data;
    if (len) *len = b.len;
    return 0;
}

int tony_read_regular_file(const char *path, size_t max, const char *what, char **out, size_t *len, tony_error *err) {
    /* O_NONBLOCK: a FIFO opens at once, to be refused, instead of waiting for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return tony_err(err, "cannot read %s: %s", path, strerror(errno));
    int rc = tony_read_fd_capped(fd, path, max, what, out, len, err);
    close(fd);
    return rc;
}

int tony_read_range(const char *path, long long offset, size_t max, tony_buf *out, long long *size,
                    tony_error *err) {
    *size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : tony_err(err, "cannot open %s: %s", path, strerror(errno));
    int rc = tony_read_range_fd(fd, path, offset, max, out, size, err);
    close(fd);
    return rc;
}

int tony_read_range_fd(int fd, const char *path, long long offset, size_t max, tony_buf *out, long long *size,
                       tony_error *err) {
    struct stat st;
    if (fstat(fd, &st) != 0) return tony_err(err, "cannot stat %s: %s", path, strerror(errno));
    *size = (long long)st.st_size;
    char buf[16384];
    size_t got = 0;
    while (got < max && offset + (long long)got < *size) {
        size_t want = max - got < sizeof buf ? max - got : sizeof buf;
        ssize_t n = pread(fd, buf, want, (off_t)(offset + (long long)got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return tony_err(err, "cannot read %s: %s", path, strerror(errno));
        if (n == 0) break;
        tony_buf_append(out, buf, (size_t)n);
        got += (size_t)n;
    }
    return 0;
}

int tony_open_within(const char *dir, const char *path, int *fd, tony_error *err) {
    size_t dlen = strlen(dir);
    while (dlen > 1 && dir[dlen - 1] == '/') dlen--;
    /* O_NONBLOCK: opening a FIFO someone put there must not hang us. */
    int f = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (f < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return 1;
        if (errno == ELOOP) return tony_err(err, "%s is a symbolic link: not served", path);
        return tony_err(err, "cannot open %s: %s", path, strerror(errno));
    }
    struct stat st;
    char link[64], real[PATH_MAX + 1];
    snprintf(link, sizeof link, "/proc/self/fd/%d", f);
    ssize_t n = readlink(link, real, sizeof real - 1);
    int rc = 0;
    if (fstat(f, &st) || !S_ISREG(st.st_mode)) rc = tony_err(err, "%s is not a regular file: not served", path);
    else if (n <= 0 || n >= (ssize_t)sizeof real - 1) rc = tony_err(err, "cannot tell where %s is: not served", path);
    if (rc == 0) {
        real[n] = '\0';
        /* What was opened, not what the name said a moment before. */
        if (strncmp(real, dir, dlen) != 0 || real[dlen] != '/')
            rc = tony_err(err, "%s leads outside %.*s (to %s) through a symbolic link: not served", path, (int)dlen, dir,
                          real);
    }
    if (rc) {
        close(f);
        return rc;
    }
    fcntl(f, F_SETFL, fcntl(f, F_GETFL) & ~O_NONBLOCK);
    *fd = f;
    return 0;
}

int tony_write_file(const char *path, const char *data, size_t len, int mode, tony_error *err) {
    char *tmp = tony_sprintf("%s.tmp.%d", path, (int)getpid());
    /* A new file of ours, never one (or a link) someone put at that name:
     * a stale one of ours goes first. */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return tony_err(err, "cannot write %s: %s", path, strerror(e));
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            free(tmp);
            return tony_err(err, "cannot write %s: %s", path, strerror(e));
        }
        off += (size_t)w;
    }
    fchmod(fd, (mode_t)mode);
    close(fd);
    if (rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        free(tmp);
        return tony_err(err, "cannot write %s: %s", path, strerror(e));
    }
    free(tmp);
    return 0;
}

int tony_copy_file(const char *src, const char *dst, tony_error *err) {
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) return tony_err(err, "cannot read %s: %s", src, strerror(errno));
    struct stat st, ost;
    fstat(in, &st);
    /* The source's mode, less what would let others write it whatever the
     * umask; into a file of ours only, never through a link. */
    mode_t mode = st.st_mode & 0755;
    int out = open(dst, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode);
    if (out < 0) {
        int e = errno;
        close(in);
        return tony_err(err, "cannot write %s: %s", dst, e == ELOOP ? "it is a symbolic link" : strerror(e));
    }
    if (fstat(out, &ost) || ost.st_uid != geteuid() || fchmod(out, mode) || ftruncate(out, 0)) {
        char whose[160];
        tony_fs_whose(&ost, whose, sizeof whose);
        close(in);
        close(out);
        return tony_err(err, "cannot write %s: it is %s, not a file of yours", dst, whose);
    }
    char buf[65536];
    ssize_t n;
    int rc = 0;
    while ((n = read(in, buf, sizeof buf)) > 0) {
        if (write(out, buf, (size_t)n) != n) {
            rc = tony_err(err, "cannot write %s: %s", dst, strerror(errno));
            break;
        }
    }
    if (n < 0) rc = tony_err(err, "cannot read %s: %s", src, strerror(errno));
    close(in);
    close(out);
    return rc;
}

void tony_file_cut_back(FILE *f, long good) {
    int fd = fileno(f);
    if (fd < 0) return;
    /* A cut that fails leaves the partial record: readers stop there. */
    if (good >= 0) (void)!ftruncate(fd, (off_t)good);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, fd);
        close(null);
    }
}

int tony_copy_tree(const char *src, const char *dst, tony_error *err) {
    struct stat st;
    if (lstat(src, &st)) return tony_err(err, "cannot read %s: %s", src, strerror(errno));
    if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlink(src, target, sizeof target - 1);
        if (n < 0) return tony_err(err, "cannot read link %s: %s", src, strerror(errno));
        target[n] = '\0';
        if (symlink(target, dst) && errno != EEXIST)
            return tony_err(err, "cannot create link %s: %s", dst, strerror(errno));
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) return tony_copy_file(src, dst, err);
    if (tony_mkdir_p(dst, (int)(st.st_mode & 0777) | 0700, err)) return -1;
    DIR *d = opendir(src);
    if (!d) return tony_err(err, "cannot open directory %s: %s", src, strerror(errno));
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char *s = tony_path_join(src, de->d_name), *t = tony_path_join(dst, de->d_name);
        rc = tony_copy_tree(s, t, err);
        free(s);
        free(t);
    }
    closedir(d);
    return rc;
}

char *tony_path_join(const char *a, const char *b) {
    if (!a || !*a || b[0] == '/') return tony_strdup(b);
    size_t n = strlen(a);
    return tony_sprintf("%s%s%s", a, a[n - 1] == '/' ? "" : "/", b);
}

const char *tony_basename(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

char *tony_abspath(const char *path) {
    if (path[0] == '/') return tony_strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return tony_strdup(path);
    return tony_path_join(cwd, path);
}

int tony_make_private(const char *path, tony_error *err) {
    struct stat st;
    if (lstat(path, &st)) return tony_err(err, "cannot stat %s: %s", path, strerror(errno));
    if (S_ISLNK(st.st_mode)) return 0;
    if ((st.st_mode & 077) && chmod(path, st.st_mode & 07700))
        return tony_err(err, "cannot make %s private (chmod): %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return 0;
    DIR *d = opendir(path);
    if (!d) return tony_err(err, "cannot read directory %s: %s", path, strerror(errno));
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char *child = tony_path_join(path, e->d_name);
        rc = tony_make_private(child, err);
        free(child);
    }
    closedir(d);
    return rc;
}

FILE *tony_fopen_perm(const char *path, int flags, int perm, const char *fmode) {
    int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC, (mode_t)perm);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_uid != geteuid()) {
        close(fd);
        errno = EPERM; /* another user's file: neither written nor chmodded */
        return NULL;
    }
    FILE *f = fchmod(fd, (mode_t)perm) == 0 ? fdopen(fd, fmode) : NULL;
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

int tony_write_in_place(const char *path, const char *data, size_t len, tony_error *err) {
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        int e = errno;
        if (fd >= 0) close(fd);
        return tony_err(err, "cannot rewrite %s in place: %s", path, strerror(e));
    }
    if ((off_t)len > st.st_size) {
        close(fd);
        return tony_err(err, "cannot rewrite %s in place: %zu bytes do not fit in its %lld", path, len,
                        (long long)st.st_size);
    }
    size_t size = (size_t)st.st_size, off = 0;
    char *all = tony_xmalloc(size);
    memcpy(all, data, len);
    memset(all + len, ' ', size - len);
    if (size > len) all[size - 1] = '\n';
    int rc = 0;
    while (rc == 0 && off < size) {
        ssize_t w = pwrite(fd, all + off, size - off, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) rc = -1;
        else off += (size_t)w;
    }
    free(all);
    if (rc) tony_err(err, "cannot rewrite %s in place: %s", path, strerror(errno));
    close(fd);
    return rc;
}
