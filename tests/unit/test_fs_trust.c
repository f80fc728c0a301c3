/* The fs helpers that keep tony's writes in what its user made (fs.h):
 * a directory of one's own or a refusal naming the planted one, shared
 * levels checked, modes set whatever the umask, no write through a link
 * or into another user's file. Another user's files are made with chown,
 * so those cases need root (the suite's e2e tests run as root); they are
 * skipped otherwise. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fs.h"
#include "common/strv.h"

#define OTHER_UID 65534 /* nobody */

static char *tmpdir(void) {
    char tmpl[] = "/tmp/tony-fs-trust-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return tony_strdup(d);
}

static mode_t mode_of(const char *p) {
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    return st.st_mode & 07777;
}

static void test_mkdir_modes_ignore_the_umask(void **state) {
    (void)state;
    char *root = tmpdir(), *deep = tony_sprintf("%s/a/b/c", root), *own = tony_sprintf("%s/x/y", root);
    tony_error err;
    mode_t old = umask(0);
    assert_int_equal(tony_mkdir_p(deep, 0750, &err), 0);
    assert_int_equal(tony_mkdir_own(own, 0750, &err), 0);
    umask(old);
    assert_int_equal(mode_of(deep), 0750);
    char *mid = tony_sprintf("%s/a/b", root);
    assert_int_equal(mode_of(mid), 0750);
    assert_int_equal(mode_of(own), 0750);
    tony_rm_rf(root, NULL);
    free(root), free(deep), free(own), free(mid);
}

static void test_mkdir_own_takes_its_own_and_refuses_others(void **state) {
    (void)state;
    char *root = tmpdir(), *d = tony_sprintf("%s/job", root), *link = tony_sprintf("%s/link", root);
    tony_error err;
    assert_int_equal(tony_mkdir_own(d, 0750, &err), 0);
    assert_int_equal(tony_mkdir_own(d, 0750, &err), 0); /* ours already: an earlier coordinator's */
    chmod(d, 0777);
    assert_int_equal(tony_mkdir_own(d, 0750, &err), -1); /* ours, but others may write it */
    assert_non_null(strstr(err.msg, "mode 0777"));
    assert_int_equal(symlink(root, link), 0);
    assert_int_equal(tony_mkdir_own(link, 0750, &err), -1);
    assert_non_null(strstr(err.msg, "symbolic link"));
    if (geteuid() == 0) {
        chmod(d, 0755);
        assert_int_equal(chown(d, OTHER_UID, OTHER_UID), 0);
        assert_int_equal(tony_mkdir_own(d, 0750, &err), -1);
        assert_non_null(strstr(err.msg, d));
        assert_non_null(strstr(err.msg, "planted"));
        assert_int_equal(mode_of(d), 0755); /* not chmodded */
    }
    tony_rm_rf(root, NULL);
    free(root), free(d), free(link);
}

static void test_shared_levels(void **state) {
    (void)state;
    char *root = tmpdir(), *shared = tony_sprintf("%s/shared", root), *lvl = tony_sprintf("%s/shared/intermediate", root);
    char *job = tony_sprintf("%s/app", lvl), *open_dir = tony_sprintf("%s/open", root);
    char *under_open = tony_sprintf("%s/open/app", root);
    tony_error err;
    assert_int_equal(mkdir(shared, 0700), 0);
    chmod(shared, 01777);
    /* a shared sticky level's child is made shared too, the job's dir private */
    assert_int_equal(tony_mkdir_own(job, 0750, &err), 0);
    assert_int_equal(mode_of(lvl), 01777);
    assert_int_equal(mode_of(job), 0750);
    assert_int_equal(tony_mkdir_safe(lvl, 0750, &err), 0);
    /* a level others may write without the sticky bit: they could swap the job's dir */
    assert_int_equal(mkdir(open_dir, 0700), 0);
    chmod(open_dir, 0777);
    assert_int_equal(tony_mkdir_own(under_open, 0750, &err), -1);
    assert_non_null(strstr(err.msg, "chmod +t"));
    /* group-writable is as open, unless the group is the owner's private
     * one (root's, named root with no other members) */
    if (geteuid() == 0) {
        chmod(open_dir, 0775);
        assert_int_equal(chown(open_dir, 0, 0), 0);
        assert_int_equal(tony_mkdir_own(under_open, 0750, &err), 0);
        assert_int_equal(rmdir(under_open), 0);
        assert_int_equal(chown(open_dir, 0, OTHER_UID), 0);
        assert_int_equal(tony_mkdir_own(under_open, 0750, &err), -1);
    }
    /* a symlink of another user's in a shared dir could be pointed anywhere */
    char *link = tony_sprintf("%s/elsewhere", shared), *via = tony_sprintf("%s/elsewhere/app", shared);
    assert_int_equal(symlink(open_dir, link), 0);
    if (geteuid() == 0) {
        assert_int_equal(lchown(link, OTHER_UID, OTHER_UID), 0);
        chmod(open_dir, 0755);
        assert_int_equal(tony_mkdir_own(via, 0750, &err), -1);
        assert_non_null(strstr(err.msg, "symbolic link of another user"));
    }
    free(link), free(via);
    tony_rm_rf(root, NULL);
    free(root), free(shared), free(lvl), free(job), free(open_dir), free(under_open);
}

static void test_check_own_dir(void **state) {
    (void)state;
    char *root = tmpdir(), *d = tony_sprintf("%s/jobs", root);
    tony_error err;
    assert_int_equal(mkdir(d, 0700), 0);
    assert_int_equal(tony_fs_check_own_dir(d, "the jobs directory", &err), 0);
    chmod(d, 0777);
    assert_int_equal(tony_fs_check_own_dir(d, "the jobs directory", &err), -1);
    assert_non_null(strstr(err.msg, "the jobs directory"));
    if (geteuid() == 0) {
        chmod(d, 0700);
        assert_int_equal(chown(d, OTHER_UID, OTHER_UID), 0);
        assert_int_equal(tony_fs_check_own_dir(d, "the jobs directory", &err), -1);
        assert_non_null(strstr(err.msg, "not yours"));
    }
    tony_rm_rf(root, NULL);
    free(root), free(d);
}

static int open_check(const char *path, tony_error *err) {
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    int rc = tony_fs_check_trusted(fd, path, "the configuration file", err);
    close(fd);
    return rc;
}

static void test_check_trusted(void **state) {
    (void)state;
    char *root = tmpdir(), *f = tony_sprintf("%s/tony.xml", root);
    tony_error err;
    assert_int_equal(tony_write_file(f, "<configuration/>", 16, 0644, &err), 0);
    assert_int_equal(open_check(f, &err), 0);
    chmod(f, 0666);
    assert_int_equal(open_check(f, &err), -1);
    assert_non_null(strstr(err.msg, "mode 0666"));
    if (geteuid() == 0) {
        /* group write for root's own group (named root, no other members:
         * a user-private group, as a umask of 002 gives): still root's
         * alone; for another group (nogroup): others may write */
        assert_int_equal(chown(f, 0, 0), 0);
        chmod(f, 0664);
        assert_int_equal(open_check(f, &err), 0);
        assert_int_equal(chown(f, 0, OTHER_UID), 0);
        assert_int_equal(open_check(f, &err), -1);
        assert_non_null(strstr(err.msg, "mode 0664"));
        chmod(f, 0644);
        assert_int_equal(chown(f, OTHER_UID, OTHER_UID), 0);
        assert_int_equal(open_check(f, &err), -1);
        assert_non_null(strstr(err.msg, "another user's"));
    }
    tony_rm_rf(root, NULL);
    free(root), free(f);
}

static void test_no_write_through_a_link_or_into_anothers_file(void **state) {
    (void)state;
    char *root = tmpdir(), *target = tony_sprintf("%s/target", root), *link = tony_sprintf("%s/events.jsonl", root);
    char *src = tony_sprintf("%s/src", root), *dst = tony_sprintf("%s/tony-final.xml", root);
    char *tmp = tony_sprintf("%s/metrics.json.tmp.%d", root, (int)getpid()), *metrics = tony_sprintf("%s/metrics.json", root);
    tony_error err;
    assert_int_equal(tony_write_file(target, "mine\n", 5, 0600, &err), 0);
    assert_int_equal(symlink(target, link), 0);
    errno = 0;
    assert_null(tony_fopen_perm(link, O_WRONLY | O_CREAT | O_APPEND, 0640, "a"));
    assert_int_equal(tony_write_file(src, "conf", 4, 0644, &err), 0);
    assert_int_equal(tony_copy_file(src, link, &err), -1); /* never through the link */
    /* a planted temp name: replaced, never written through */
    assert_int_equal(symlink(target, tmp), 0);
    assert_int_equal(tony_write_file(metrics, "{}", 2, 0640, &err), 0);
    char *text = NULL;
    assert_int_equal(tony_read_file(target, &text, NULL, &err), 0);
    assert_string_equal(text, "mine\n");
    assert_int_equal(mode_of(target), 0600);
    free(text);
    if (geteuid() == 0) {
        assert_int_equal(tony_write_file(dst, "", 0, 0666, &err), 0);
        assert_int_equal(chown(dst, OTHER_UID, OTHER_UID), 0);
        assert_int_equal(tony_copy_file(src, dst, &err), -1);
        assert_null(tony_fopen_perm(dst, O_WRONLY | O_CREAT | O_APPEND, 0640, "a"));
        struct stat st;
        assert_int_equal(stat(dst, &st), 0);
        assert_int_equal(st.st_size, 0);
        assert_int_equal(st.st_mode & 0777, 0666);
    }
    tony_rm_rf(root, NULL);
    free(root), free(target), free(link), free(src), free(dst), free(tmp), free(metrics);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mkdir_modes_ignore_the_umask),
        cmocka_unit_test(test_mkdir_own_takes_its_own_and_refuses_others),
        cmocka_unit_test(test_shared_levels),
        cmocka_unit_test(test_check_own_dir),
        cmocka_unit_test(test_check_trusted),
        cmocka_unit_test(test_no_write_through_a_link_or_into_anothers_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
