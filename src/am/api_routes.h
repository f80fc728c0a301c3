/* The coordinator API's routes as one table (api.c holds it): each route's
 * path pattern, method, who may call it, the fields of its body (amapi.h's
 * names) and its handler. Routing, the 404 and 405 answers with the lists
 * they give, and docs/api.md's route list (tests/unit/test_api_routes.c
 * compares them) all come from it. This module matches and renders; it
 * knows nothing of the coordinator. */
#ifndef TONY_AM_API_ROUTES_H
#define TONY_AM_API_ROUTES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* How a route's path matches. */
typedef enum {
    AM_MATCH_EXACT,   /* the path itself */
    AM_MATCH_FILES,   /* the path, a folder ("/ui/"), and any file name under it */
    AM_MATCH_SUBTREE, /* the path, or it followed by "/" and anything */
    AM_MATCH_TASK,    /* AM_API_TASKS<role>/<index>/<verb>: path is the verb */
} am_match;

/* A request's method is GET, POST or OTHER (PUT, PATCH, DELETE: only a
 * route of ANY takes those); a route's is GET, POST or ANY. */
typedef enum { AM_METHOD_GET, AM_METHOD_POST, AM_METHOD_OTHER, AM_METHOD_ANY } am_method;

/* Who may call: anyone (the page's own files, the same for every job),
 * the job's read token holders (reads_allowed checked it before routing),
 * a token holder or the browser the notebook link let in (the notebook's
 * proxy checks it), its client (signed with the job's key), or the task's
 * executor (signed; its body a JSON object with "attempt"). */
typedef enum { AM_WHO_ANYONE, AM_WHO_READER, AM_WHO_NOTEBOOK, AM_WHO_CLIENT, AM_WHO_EXECUTOR } am_who;

typedef struct am_call am_call; /* api.c's: the request and what routing found */
typedef void am_route_fn(am_call *c);

typedef struct am_route {
    am_match match;
    const char *path; /* amapi.h's path, or the task verb */
    am_method method;
    am_who who;
    bool any_attempt; /* AM_WHO_EXECUTOR: the handler takes calls for other attempts than the current one */
    const char *body; /* POST: the body's fields, "?" after optional ones */
    const char *what; /* one line for docs/api.md */
    am_route_fn *fn;
} am_route;

/* Why no route took a request. */
typedef enum { AM_ROUTE_FOUND, AM_ROUTE_NO_PATH, AM_ROUTE_NO_METHOD } am_route_verdict;

/* The route for (path, method) among n, or why none: a path that no route
 * matches, or one that some match with another method. Task routes match
 * by their verb (verb; NULL for other paths). */
am_route_verdict am_route_find(const am_route *routes, size_t n, const char *path, const char *verb, am_method method,
                               const am_route **found);
/* The methods a path (or task verb) allows, as "GET", "POST", "GET or
 * POST" or "any method", for a 405. */
const char *am_route_methods(const am_route *routes, size_t n, const char *path, const char *verb);
/* The task verbs, each once, joined by sep ("|" or ", "); the caller frees it. */
char *am_route_verbs(const am_route *routes, size_t n, const char *sep, const char *last_sep);
/* The kind of a register body (amapi.h's AM_API_REG_*, a static string): the one it names,
 * or for an executor from before AM_API_REG_KIND, the one its fields
 * told then; NULL when it names none of the kinds. */
const char *am_route_registration_kind(const json_t *body);
/* The route list of docs/api.md, a Markdown table; the caller frees it. */
char *am_route_markdown(const am_route *routes, size_t n);

#endif
