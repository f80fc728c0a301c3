/* The coordinator's history copies to its mirror (am/history.c): one batch
 * out at a time, later copies coalesced into the newest, each batch reading
 * a snapshot taken when it was asked for; the final batch after the one
 * out and in place of one waiting; a failure logged once and the mirror
 * dropped; a batch still out at the end stopped. The mirror here is a
 * recorder the test answers by hand, standing in for the HDFS one (whose
 * WebHDFS calls run in tests/e2e/test_yarn_history.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "am/history.h"
#include "common/fs.h"
#include "common/jhist.h"
#include "common/jobdir.h"
#include "common/log.h"
#include "common/strv.h"

#define APP "application_1700000000000_0042"

typedef struct fake_mirror {
    tony_am_history_mirror m;
    int runs, stops;
    bool refuse;      /* run fails: no thread */
    bool stop_ends_ok; /* the batch out ends well when stopped (its last call was under way) */
    const tony_am_mirror_batch *out;
    tony_am_mirror_done_fn done;
    void *arg;
    /* each batch run, as "KIND path[<-local content][ from][ keep]" lines */
    tony_strv batches[8];
} fake_mirror;

static const char *kind_name(tony_am_mirror_step_kind k) {
    switch (k) {
    case TONY_AM_MIRROR_MKDIRS: return "MKDIRS";
    case TONY_AM_MIRROR_PUT: return "PUT";
    case TONY_AM_MIRROR_MOVE_JHIST: return "MOVE_JHIST";
    case TONY_AM_MIRROR_REMOVE: return "REMOVE";
    }
    return "?";
}

static int fake_run(void *ctx, struct event_base *base, const tony_am_mirror_batch *b, tony_am_mirror_done_fn done,
                    void *arg, tony_error *err) {
    (void)base;
    fake_mirror *f = ctx;
    if (f->refuse) return tony_err(err, "cannot start a worker thread: no resources");
    assert_null(f->out); /* one batch at a time */
    assert_true(f->runs < 8);
    tony_strv *rec = &f->batches[f->runs++];
    for (size_t i = 0; i < b->n; i++) {
        const tony_am_mirror_step *st = &b->steps[i];
        if (st->kind == TONY_AM_MIRROR_PUT) {
            char *data = NULL;
            size_t len = 0;
            tony_error e;
            /* the snapshot is there while the batch is out */
            if (tony_read_file(st->local, &data, &len, &e)) fail_msg("%s", e.msg);
            tony_strv_pushf(rec, "PUT %s<-%s", st->path, tony_str_ends_with(st->path, ".xml") ? "(conf)" : data);
            free(data);
        } else if (st->kind == TONY_AM_MIRROR_MOVE_JHIST) {
            tony_strv_pushf(rec, "MOVE_JHIST %s from %s keep %s", st->path, st->from, st->keep);
        } else {
            tony_strv_pushf(rec, "%s %s", kind_name(st->kind), st->path);
        }
    }
    f->out = b;
    f->done = done;
    f->arg = arg;
    return 0;
}

/* The mirror's answer on the loop. */
static void answer(fake_mirror *f, int rc) {
    assert_non_null(f->out);
    tony_error err;
    if (rc) tony_err(&err, "HDFS MKDIRS: Permission denied: user=tony");
    f->out = NULL;
    f->done(f->arg, rc, &err);
}

static void fake_stop(void *ctx) {
    fake_mirror *f = ctx;
    f->stops++;
    if (f->out) answer(f, f->stop_ends_ok ? 0 : -1);
}

typedef struct fixture {
    char root[64];
    char *conf;
    tony_jhist_dirs local, remote;
    fake_mirror f;
    FILE *log;
} fixture;

static int setup(void **state) {
    fixture *x = tony_xcalloc(1, sizeof *x);
    snprintf(x->root, sizeof x->root, "/tmp/tony-histmirror-XXXXXX");
    assert_non_null(mkdtemp(x->root));
    x->conf = tony_path_join(x->root, "conf.xml");
    tony_error err;
    assert_int_equal(tony_write_file(x->conf, "<configuration/>", 16, 0644, &err), 0);
    char *work = tony_path_join(x->root, "work");
    tony_jhist_dirs_resolve(NULL, NULL, NULL, work, &x->local);
    free(work);
    x->remote.location = tony_strdup("/h");
    x->remote.intermediate = tony_strdup("/h/intermediate");
    x->remote.finished = tony_strdup("/h/finished");
    x->f.m = (tony_am_history_mirror){.ctx = &x->f, .authority = "nn:8020", .run = fake_run, .stop = fake_stop};
    x->log = tmpfile();
    tony_log_init("am", x->log);
    *state = x;
    return 0;
}

static int teardown(void **state) {
    fixture *x = *state;
    tony_log_init("am", NULL);
    fclose(x->log);
    tony_rm_rf(x->root, NULL);
    free(x->conf);
    tony_jhist_dirs_free(&x->local);
    tony_jhist_dirs_free(&x->remote);
    for (int i = 0; i < 8; i++) tony_strv_free(&x->f.batches[i]);
    free(x);
    return 0;
}

static am_history *new_history(fixture *x) {
    tony_error err;
    am_history *h = am_history_new(&x->local, NULL, &x->f.m, &x->remote, x->conf, APP, 1700000000000LL, &err);
    if (!h) fail_msg("%s", err.msg);
    return h;
}

static void write_metrics(am_history *h, const char *text) {
    char *p = tony_path_join(am_history_dir(h), TONY_JHIST_METRICS);
    tony_error err;
    assert_int_equal(tony_write_file(p, text, strlen(text), 0644, &err), 0);
    free(p);
}

static char *log_text(fixture *x) {
    fflush(x->log);
    long n = ftell(x->log);
    char *s = tony_xcalloc((size_t)n + 1, 1);
    rewind(x->log);
    assert_int_equal(fread(s, 1, (size_t)n, x->log), (size_t)n);
    return s;
}

static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

static void assert_has(const tony_strv *v, const char *line) {
    if (!tony_strv_contains(v, line)) {
        char *all = tony_strv_join(v, "\n  ");
        fail_msg("no '%s' in the batch:\n  %s", line, all);
    }
}

static void test_copies_coalesce_into_the_newest(void **state) {
    fixture *x = *state;
    fake_mirror *f = &x->f;
    am_history *h = new_history(x);
    assert_true(am_history_settled(h));
    char *jhist = tony_strdup(tony_basename(am_history_file(h))); /* the .jhist.inprogress */

    write_metrics(h, "m0");
    am_history_sync(h);
    assert_int_equal(f->runs, 1);
    assert_false(am_history_settled(h));
    const tony_strv *b = &f->batches[0];
    assert_string_equal(b->items[0], "MKDIRS /h/intermediate/" APP);
    assert_has(b, "PUT /h/intermediate/" APP "/tony-final.xml<-(conf)");
    assert_has(b, "PUT /h/intermediate/" APP "/metrics.json<-m0");
    char *line = tony_sprintf("PUT /h/intermediate/%s/%s<-", APP, jhist);
    bool found = false;
    for (size_t i = 0; i < b->len; i++) found |= tony_str_starts_with(b->items[i], line);
    assert_true(found);
    free(line);

    /* While it is out, more copies are asked for: they become one, of the
     * files as they are when it goes out. */
    const char *snap0 = f->out->steps[1].local;
    char *snap0_copy = tony_strdup(snap0);
    write_metrics(h, "m1");
    am_history_sync(h);
    write_metrics(h, "m2");
    am_history_sync(h);
    write_metrics(h, "m3");
    assert_int_equal(f->runs, 1);
    assert_false(am_history_settled(h));
    answer(f, 0);
    assert_false(tony_file_exists(snap0_copy)); /* the first batch's snapshot went with it */
    free(snap0_copy);
    assert_int_equal(f->runs, 2);
    b = &f->batches[1];
    assert_int_equal(b->len, 2); /* the dir is made and tony-final.xml copied: not again */
    assert_has(b, "PUT /h/intermediate/" APP "/metrics.json<-m3");
    write_metrics(h, "m4");
    answer(f, 0);
    assert_true(am_history_settled(h));

    /* The end: the finished tree, the other coordinators' files moved over,
     * the intermediate dir removed. */
    tony_error err;
    assert_int_equal(am_history_finish(h, 1700000100000LL, "SUCCEEDED", &err), 0);
    assert_int_equal(f->runs, 3);
    b = &f->batches[2];
    const char *fin = "/h/finished/2023/11/14/" APP;
    char *want = tony_sprintf("MKDIRS %s", fin);
    assert_string_equal(b->items[0], want);
    free(want);
    want = tony_sprintf("PUT %s/metrics.json<-m4", fin);
    assert_has(b, want);
    free(want);
    want = tony_sprintf("MOVE_JHIST %s from /h/intermediate/%s keep %s", fin, APP, jhist);
    assert_has(b, want);
    free(want);
    assert_string_equal(b->items[b->len - 1], "REMOVE /h/intermediate/" APP);
    char *where = am_history_where(h);
    want = tony_sprintf("hdfs://nn:8020%s", fin);
    assert_string_equal(where, want);
    free(want);
    free(where);
    answer(f, 0);
    assert_true(am_history_settled(h));
    am_history_free(h);
    assert_int_equal(f->stops, 1);
    char *log = log_text(x);
    assert_int_equal(count(log, "history: copied to hdfs://nn:8020/h/intermediate/" APP " in "), 2);
    assert_int_equal(count(log, "history: moved to hdfs://nn:8020/h/finished/2023/11/14/" APP " in "), 1);
    assert_int_equal(count(log, "WARN"), 0);
    free(log);
    free(jhist);
}

static void test_the_end_waits_for_the_copy_out(void **state) {
    fixture *x = *state;
    fake_mirror *f = &x->f;
    am_history *h = new_history(x);
    am_history_sync(h);
    am_history_sync(h); /* waits */
    tony_error err;
    assert_int_equal(am_history_finish(h, 1700000100000LL, "FAILED", &err), 0);
    assert_int_equal(f->runs, 1); /* the final batch waits for the one out, in place of the one waiting */
    answer(f, 0);
    assert_int_equal(f->runs, 2);
    const tony_strv *b = &f->batches[1];
    assert_true(tony_str_starts_with(b->items[0], "MKDIRS /h/finished/"));
    assert_string_equal(b->items[b->len - 1], "REMOVE /h/intermediate/" APP);
    bool final_name = false;
    for (size_t i = 0; i < b->len; i++) final_name |= strstr(b->items[i], "-FAILED.jhist<-") != NULL;
    assert_true(final_name);
    answer(f, 0);
    am_history_free(h);
    char *log = log_text(x);
    assert_int_equal(count(log, "history: copied to"), 1);
    assert_int_equal(count(log, "history: moved to"), 1);
    free(log);
}

static void test_a_failure_is_logged_once_and_drops_the_mirror(void **state) {
    fixture *x = *state;
    fake_mirror *f = &x->f;
    am_history *h = new_history(x);
    am_history_sync(h);
    am_history_sync(h); /* waits */
    answer(f, -1);
    assert_int_equal(f->runs, 1); /* the waiting one is dropped */
    assert_true(am_history_settled(h));
    char *where = am_history_where(h);
    assert_string_equal(where, am_history_dir(h)); /* the local copy is all there is */
    free(where);
    am_history_sync(h);
    tony_error err;
    assert_int_equal(am_history_finish(h, 1700000100000LL, "SUCCEEDED", &err), 0); /* the job is not failed */
    assert_int_equal(f->runs, 1);
    assert_true(tony_is_dir(am_history_dir(h))); /* the local finished tree */
    am_history_free(h);
    char *log = log_text(x);
    assert_int_equal(count(log, "history: not copied to HDFS any more: HDFS MKDIRS: Permission denied"), 1);
    assert_int_equal(count(log, "WARN"), 1);
    free(log);
}

static void test_a_copy_out_at_exit_is_stopped(void **state) {
    fixture *x = *state;
    fake_mirror *f = &x->f;
    am_history *h = new_history(x);
    am_history_sync(h);
    tony_error err;
    assert_int_equal(am_history_finish(h, 1700000100000LL, "SUCCEEDED", &err), 0);
    assert_false(am_history_settled(h));
    am_history_free(h); /* the coordinator could wait no longer */
    assert_int_equal(f->stops, 1);
    assert_null(f->out);
    char *log = log_text(x);
    assert_int_equal(count(log, "WARN"), 1);
    assert_int_equal(count(log, "history: not copied to HDFS any more: the copy to hdfs://nn:8020/h/finished/"), 1);
    assert_int_equal(count(log, "had not finished when the coordinator stopped waiting for it"), 1);
    free(log);
    /* no snapshot is left behind */
    char *snaps = tony_sprintf("%s/.%s.mirror", x->local.intermediate, APP);
    assert_false(tony_file_exists(snaps));
    free(snaps);
}

static void test_a_copy_that_ends_well_when_stopped_is_no_failure(void **state) {
    fixture *x = *state;
    fake_mirror *f = &x->f;
    f->stop_ends_ok = true;
    am_history *h = new_history(x);
    am_history_sync(h);
    am_history_sync(h); /* wanted, never taken */
    am_history_free(h);
    assert_int_equal(f->runs, 1);
    char *log = log_text(x);
    assert_int_equal(count(log, "history: copied to"), 1);
    assert_int_equal(count(log, "WARN"), 0);
    free(log);
}

static void test_no_thread_for_the_mirror(void **state) {
    fixture *x = *state;
    fake_mirror *f = &x->f;
    f->refuse = true;
    am_history *h = new_history(x);
    am_history_sync(h);
    assert_true(am_history_settled(h));
    am_history_sync(h);
    am_history_free(h);
    char *log = log_text(x);
    assert_int_equal(count(log, "history: not copied to HDFS any more: cannot start a worker thread"), 1);
    free(log);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_copies_coalesce_into_the_newest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_end_waits_for_the_copy_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_failure_is_logged_once_and_drops_the_mirror, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_copy_out_at_exit_is_stopped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_copy_that_ends_well_when_stopped_is_no_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_thread_for_the_mirror, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
