/* The coordinator's HTTP API server (api.c; the contract is
 * common/amapi.h): it parses requests, feeds the state machine events and
 * answers; am.c starts it and has it answer the executors waiting at the
 * barrier when the state machine says so. */
#ifndef TONY_AM_API_H
#define TONY_AM_API_H

#include "am/am_internal.h"
#include "am/api_routes.h"

/* The longest an executor's registration poll is held before "wait". */
#define AM_REGISTER_POLL_MS 15000

/* Makes the API's part and listens on bind_host, any free port; am->id.url
 * names am->id.host. */
int am_api_start(tony_am *am, const char *bind_host, tony_error *err);
/* Makes the API's part without a server, for a coordinator whose port and
 * read token are set (the request fuzzer hands am_api_handle requests). */
void am_api_init(tony_am *am);
/* When the web UI last polled the job (0: never): the coordinator lingers
 * after the end for a UI still watching. */
long long am_api_ui_seen_ms(const tony_am *am);
/* The server's handler of every request (arg: the tony_am); its own
 * symbol so that the request fuzzer (tests/fuzz/fuzz_api.c) can hand it
 * requests without a socket. */
void am_api_handle(struct evhttp_request *req, void *arg);
/* The API's route table (api_routes.h), *n routes: what routing, the
 * 404/405 answers and docs/api.md's route list are made of. */
const am_route *am_api_routes(size_t *n);
/* Answers every executor waiting at the barrier: go, or "ending" once the
 * attempt is over (AM_ACT_RELEASE_GANG). */
void am_api_release_waiters(tony_am *am);
/* Answers "wait" to the polls held longer than AM_REGISTER_POLL_MS. */
void am_api_expire_waiters(tony_am *am, long long now_ms);
/* In-place restarts: the next attempt has started; the registrations held
 * for it (kept containers' executors) are taken now. */
void am_api_admit_early(tony_am *am);
/* Drops every held poll unanswered and frees the API's part: its server,
 * DNS base and all (the coordinator is going away). */
void am_api_free(tony_am *am);

#endif
