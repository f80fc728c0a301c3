/* The worker pool behind tony_workq: one mutex guards the queue, the lanes
 * in use and the finished list; workers sleep on a condition variable; an
 * eventfd read by the loop says that finished jobs wait for their done call.
 * Workers block every signal, so signal handlers (the loop's) run on the main
 * thread and a worker's poll() is never cut short. */
#include "common/workq.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/strv.h"

typedef struct job {
    struct job *next;
    char *lane;
    tony_workq_run_fn run;
    tony_workq_done_fn done;
    void *arg;
    bool ran;
} job;

typedef struct job_list {
    job *head, *tail;
    size_t n;
} job_list;

struct tony_workq {
    pthread_mutex_t mu;
    pthread_cond_t work;     /* a job was queued, a lane freed, or stopping */
    pthread_cond_t finished; /* a job went to the finished list */
    job_list queued, finished_jobs;
    const char **busy; /* lanes of running jobs (max_threads slots, NULL = free) */
    pthread_t *threads;
    int nthreads, max_threads, idle;
    size_t running;
    size_t pending; /* submitted, done not yet called: loop thread only */
    bool stopping;
    int wake_fd;
    struct event *wake;
};

static void list_push(job_list *l, job *j) {
    j->next = NULL;
    if (l->tail) l->tail->next = j;
    else l->head = j;
    l->tail = j;
    l->n++;
}

static job_list list_take_all(job_list *l) {
    job_list all = *l;
    memset(l, 0, sizeof *l);
    return all;
}

static bool lane_busy(const tony_workq *q, const char *lane) {
    if (!lane) return false;
    for (int i = 0; i < q->max_threads; i++)
        if (q->busy[i] && strcmp(q->busy[i], lane) == 0) return true;
    return false;
}

static void lane_set(tony_workq *q, const char *lane, bool busy) {
    if (!lane) return;
    for (int i = 0; i < q->max_threads; i++) {
        if (busy && !q->busy[i]) {
            q->busy[i] = lane;
            return;
        }
        if (!busy && q->busy[i] == lane) {
            q->busy[i] = NULL;
            return;
        }
    }
}

/* The first queued job whose lane is free, unlinked. Locked. */
static job *take_runnable(tony_workq *q) {
    job *prev = NULL;
    for (job *j = q->queued.head; j; prev = j, j = j->next) {
        if (lane_busy(q, j->lane)) continue;
        if (prev) prev->next = j->next;
        else q->queued.head = j->next;
        if (q->queued.tail == j) q->queued.tail = prev;
        q->queued.n--;
        j->next = NULL;
        return j;
    }
    return NULL;
}

static void *worker(void *arg) {
    tony_workq *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        job *j = NULL;
        while (!q->stopping && !(j = take_runnable(q))) {
            q->idle++;
            pthread_cond_wait(&q->work, &q->mu);
            q->idle--;
        }
        if (!j) break; /* stopping: what is still queued gets cancelled by free */
        q->running++;
        lane_set(q, j->lane, true);
        pthread_mutex_unlock(&q->mu);

        j->run(j->arg);

        pthread_mutex_lock(&q->mu);
        j->ran = true;
        q->running--;
        lane_set(q, j->lane, false);
        list_push(&q->finished_jobs, j);
        uint64_t one = 1;
        /* A full counter (never, in practice) still leaves the fd readable. */
        if (write(q->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN) tony_warn("workq wake-up: %s", strerror(errno));
        pthread_cond_broadcast(&q->work); /* the lane's next job may run now */
        pthread_cond_broadcast(&q->finished);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* Locked. A failure leaves the threads there are (at least the first). */
static int spawn(tony_workq *q, tony_error *err) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&q->threads[q->nthreads], NULL, worker, q);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) return tony_err(err, "cannot start a worker thread: %s", strerror(rc));
    q->nthreads++;
    return 0;
}

static void deliver(tony_workq *q, job_list l) {
    for (job *j = l.head, *next; j; j = next) {
        next = j->next;
        q->pending--;
        j->done(j->arg, j->ran);
        free(j->lane);
        free(j);
    }
}

static job_list take_finished(tony_workq *q) {
    pthread_mutex_lock(&q->mu);
    job_list l = list_take_all(&q->finished_jobs);
    pthread_mutex_unlock(&q->mu);
    return l;
}

static void on_wake(evutil_socket_t fd, short what, void *arg) {
    (void)what;
    tony_workq *q = arg;
    uint64_t n;
    if (read(fd, &n, sizeof n) < 0 && errno != EAGAIN) tony_warn("workq wake-up: %s", strerror(errno));
    deliver(q, take_finished(q));
}

tony_workq *tony_workq_new(struct event_base *base, int max_threads, tony_error *err) {
    if (max_threads < 1) max_threads = 1;
    tony_workq *q = tony_xcalloc(1, sizeof *q);
    q->max_threads = max_threads;
    q->busy = tony_xcalloc((size_t)max_threads, sizeof *q->busy);
    q->threads = tony_xcalloc((size_t)max_threads, sizeof *q->threads);
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->work, NULL);
    /* tony_workq_wait's limit must not move with the wall clock. */
    tony_clock_cond_init(&q->finished);
    q->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (q->wake_fd < 0) {
        tony_err(err, "cannot create an eventfd for the worker threads: %s", strerror(errno));
        tony_workq_free(q);
        return NULL;
    }
    q->wake = event_new(base, q->wake_fd, EV_READ | EV_PERSIST, on_wake, q);
    event_add(q->wake, NULL);
    pthread_mutex_lock(&q->mu);
    int rc = spawn(q, err);
    pthread_mutex_unlock(&q->mu);
    if (rc < 0) {
        tony_workq_free(q);
        return NULL;
    }
    return q;
}

void tony_workq_submit(tony_workq *q, const char *lane, tony_workq_run_fn run, tony_workq_done_fn done, void *arg) {
    job *j = tony_xcalloc(1, sizeof *j);
    j->lane = lane ? tony_strdup(lane) : NULL;
    j->run = run;
    j->done = done;
    j->arg = arg;
    q->pending++;
    pthread_mutex_lock(&q->mu);
    list_push(&q->queued, j);
    /* Queued jobs beyond the idle threads each deserve a thread (some may
     * wait for a busy lane: at worst a thread too many, within the cap). */
    if (q->queued.n > (size_t)q->idle && q->nthreads < q->max_threads) {
        tony_error err;
        if (spawn(q, &err) < 0) tony_warn("%s; %d thread(s) carry on", err.msg, q->nthreads);
    }
    pthread_cond_broadcast(&q->work);
    pthread_mutex_unlock(&q->mu);
}

size_t tony_workq_pending(tony_workq *q) { return q->pending; }

void tony_workq_drain(tony_workq *q) {
    while (q->pending > 0) {
        pthread_mutex_lock(&q->mu);
        while (!q->finished_jobs.head) pthread_cond_wait(&q->finished, &q->mu);
        job_list l = list_take_all(&q->finished_jobs);
        pthread_mutex_unlock(&q->mu);
        deliver(q, l);
    }
}

bool tony_workq_wait(tony_workq *q, int timeout_ms) {
    if (q->pending == 0) return false;
    struct timespec end;
    tony_clock_cond_deadline(timeout_ms, &end);
    pthread_mutex_lock(&q->mu);
    int rc = 0;
    while (!q->finished_jobs.head && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&q->finished, &q->mu, &end);
    job_list l = list_take_all(&q->finished_jobs);
    pthread_mutex_unlock(&q->mu);
    deliver(q, l);
    return l.n > 0;
}

void tony_workq_free(tony_workq *q) {
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    q->stopping = true;
    pthread_cond_broadcast(&q->work);
    pthread_mutex_unlock(&q->mu);
    for (int i = 0; i < q->nthreads; i++) pthread_join(q->threads[i], NULL);
    /* No thread left: the lists are ours. Finished first, then cancelled. */
    deliver(q, list_take_all(&q->finished_jobs));
    deliver(q, list_take_all(&q->queued));
    if (q->wake) event_free(q->wake);
    if (q->wake_fd >= 0) close(q->wake_fd);
    pthread_cond_destroy(&q->work);
    pthread_cond_destroy(&q->finished);
    pthread_mutex_destroy(&q->mu);
    free(q->busy);
    free(q->threads);
    free(q);
}
