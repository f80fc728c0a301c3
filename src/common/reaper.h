/* Child reaping inside a libevent loop: SIGCHLD becomes an event, and each
 * watched pid's exit is delivered to its own callback. It reaps the loop
 * thread's children only: a worker thread that runs a child waits for it
 * itself (tony_proc_run). */
#ifndef TONY_REAPER_H
#define TONY_REAPER_H

#include <event2/event.h>
#include <sys/types.h>

typedef void (*tony_reaper_cb)(void *ctx, pid_t pid, int wait_status);
typedef struct tony_reaper tony_reaper;

tony_reaper *tony_reaper_new(struct event_base *base);
void tony_reaper_watch(tony_reaper *r, pid_t pid, tony_reaper_cb cb, void *ctx);
void tony_reaper_free(tony_reaper *r);

#endif
