/* Files and directories: the job dir, task work dirs, staged files. */
#ifndef TONY_FS_H
#define TONY_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/error.h"

struct tony_buf;

struct stat;

/* Creates path and the directories above it that are missing, each given
 * mode explicitly (whatever the umask). */
int tony_mkdir_p(const char *path, int mode, tony_error *err);
/* A directory of this user's own at path, for what a job writes where
 * others may write too (a shared history location): made here with mode
 * (set explicitly), or already there as a real directory (no symlink) of
 * this user's that nobody else may write; anything else (a folder another
 * user planted at a name they guessed) is refused, the error naming it,
 * its owner and mode. The directories above are made when missing (the
 * child of a shared sticky one shared as 01777, so other users' jobs fit
 * in too) or must be writable by their owner only, or sticky (nobody
 * renames another's entry); a symlink on the way in a sticky shared dir
 * must be root's or this user's. */
int tony_mkdir_own(const char *path, int mode, tony_error *err);
/* The directories of path made when missing or checked as tony_mkdir_own
 * checks those above its own (path itself included): for the shared
 * levels of a tree (a history location's intermediate/, finished/yyyy/). */
int tony_mkdir_safe(const char *path, int mode, tony_error *err);
/* path (as lstat sees it) is a directory of this user's that nobody else
 * may write; else an error naming what (e.g. "the jobs directory"), its
 * owner and mode. */
int tony_fs_check_own_dir(const char *path, const char *what, tony_error *err);
/* The open file fd (at path) is this user's or root's and nobody else may
 * write it: one whose contents may steer what tony runs (a configuration
 * file). Else an error naming what, the file, its owner and mode. */
int tony_fs_check_trusted(int fd, const char *path, const char *what, tony_error *err);
/* "alice's, mode 0666" for st, for messages. */
void tony_fs_whose(const struct stat *st, char *out, size_t n);
/* Creates the directory root/rel and those between, refusing to go through
 * anything under root that is not a directory (a symlink above all), so
 * that what is written there stays under root. rel must be relative and
 * free of '..' (checked). */
int tony_mkdir_within(const char *root, const char *rel, int mode, tony_error *err);
/* Removes a file or a whole tree; a missing path is not an error. */
int tony_rm_rf(const char *path, tony_error *err);
bool tony_is_dir(const char *path);
bool tony_file_exists(const char *path);
/* Reads a whole file into a NUL-terminated malloc'ed buffer. */
int tony_read_file(const char *path, char **out, size_t *len, tony_error *err);
/* Reads a regular file whole into a NUL-terminated malloc'ed buffer, if it
 * has at most max bytes: a FIFO, a device or a directory is refused at
 * once (never waited on, never read), and so is a larger file (never read
 * at all). what names the file's use in the message ("a configuration
 * file"). The same for a file already open (fd stays open). */
int tony_read_regular_file(const char *path, size_t max, const char *what, char **out, size_t *len, tony_error *err);
int tony_read_fd_capped(int fd, const char *path, size_t max, const char *what, char **out, size_t *len,
                        tony_error *err);
/* Reads up to max bytes of path from offset into out (appended) and sets
 * *size to the file's size; a file that does not exist yet reads as empty. */
int tony_read_range(const char *path, long long offset, size_t max, struct tony_buf *out, long long *size,
                    tony_error *err);
/* The same from an open file. */
int tony_read_range_fd(int fd, const char *path, long long offset, size_t max, struct tony_buf *out, long long *size,
                       tony_error *err);
/* Opens path for reading only if it is a regular file whose real path lies
 * under dir (an absolute path taken as is: every component of path below
 * it must be no symlink): *fd gets it. For files named by data others may
 * have written (history), so that a planted link or FIFO serves nothing.
 * Returns 0, 1 when there is no such file, -1 when it is refused (err). */
int tony_open_within(const char *dir, const char *path, int *fd, tony_error *err);
/* Writes atomically (a new temp file, never a link, + rename) with the
 * given mode. */
int tony_write_file(const char *path, const char *data, size_t len, int mode, tony_error *err);
/* Copies src to dst with src's mode less group and other write; dst is
 * made, or must be a file of this user's (never a symlink: refused). */
int tony_copy_file(const char *src, const char *dst, tony_error *err);
/* For record files written through stdio (history): after a failed write
 * (a full disk), cuts f back to good bytes, the end of its last whole
 * record, and points its descriptor at /dev/null, so that what stdio still
 * holds goes nowhere when f is closed; the file stays readable. */
void tony_file_cut_back(FILE *f, long good);
/* fopen with the file's permissions said, not left to the umask: open(2)
 * with flags (O_NOFOLLOW and O_CLOEXEC added; a file there that is
 * another user's is refused, EPERM, untouched), then fchmod to perm (a umask of 000 must
 * not make history world-writable); fmode is fdopen's ("wb", "a"). NULL
 * with errno set when it fails. */
FILE *tony_fopen_perm(const char *path, int flags, int perm, const char *fmode);
/* Overwrites the existing file at path with data in place, in the blocks it
 * already has (no temporary file, no new blocks: it works on a full disk),
 * and blanks the rest with spaces: the file keeps its size, so that a
 * later, longer rewrite still fits (for text that may end in whitespace,
 * such as JSON). Only for data no longer than the file: else an error, as
 * when path is missing. Not atomic: for a last word where the atomic write
 * (tony_write_file) failed. */
int tony_write_in_place(const char *path, const char *data, size_t len, tony_error *err);
/* Copies a directory tree (files and dirs; symlinks kept as links). */
int tony_copy_tree(const char *src, const char *dst, tony_error *err);
/* Clears the group and other bits of path and everything under it
 * (symlinks are not followed). */
int tony_make_private(const char *path, tony_error *err);
char *tony_path_join(const char *a, const char *b); /* malloc'ed */
const char *tony_basename(const char *path);       /* points into path */
/* Absolute form of path (relative to the cwd); malloc'ed. */
char *tony_abspath(const char *path);

#endif
