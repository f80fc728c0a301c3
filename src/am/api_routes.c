/* Matching requests against the API's route table (api_routes.h) and
 * rendering it: the lists in 404 and 405 answers and docs/api.md's route
 * list are read off the one table, so they cannot drift from routing; and
 * the one body field that picks a handler's branch, register's kind. */
#include "am/api_routes.h"

#include <jansson.h>
#include <string.h>

#include "common/amapi.h"
#include "common/strv.h"

static bool matches(const am_route *r, const char *path, const char *verb) {
    if (verb) return r->match == AM_MATCH_TASK && strcmp(verb, r->path) == 0;
    size_t n = strlen(r->path);
    switch (r->match) {
    case AM_MATCH_EXACT: return strcmp(path, r->path) == 0;
    case AM_MATCH_FILES: return strncmp(path, r->path, n) == 0;
    case AM_MATCH_SUBTREE: return strncmp(path, r->path, n) == 0 && (path[n] == '\0' || path[n] == '/');
    case AM_MATCH_TASK: return false;
    }
    return false;
}

am_route_verdict am_route_find(const am_route *routes, size_t n, const char *path, const char *verb, am_method method,
                               const am_route **found) {
    am_route_verdict v = AM_ROUTE_NO_PATH;
    for (size_t i = 0; i < n; i++) {
        if (!matches(&routes[i], path, verb)) continue;
        if (routes[i].method == method || routes[i].method == AM_METHOD_ANY) {
            *found = &routes[i];
            return AM_ROUTE_FOUND;
        }
        v = AM_ROUTE_NO_METHOD;
    }
    return v;
}

const char *am_route_methods(const am_route *routes, size_t n, const char *path, const char *verb) {
    bool get = false, post = false, any = false;
    for (size_t i = 0; i < n; i++) {
        if (!matches(&routes[i], path, verb)) continue;
        get |= routes[i].method == AM_METHOD_GET;
        post |= routes[i].method == AM_METHOD_POST;
        any |= routes[i].method == AM_METHOD_ANY;
    }
    return any ? "any method" : get && post ? "GET or POST" : post ? "POST" : "GET";
}

char *am_route_verbs(const am_route *routes, size_t n, const char *sep, const char *last_sep) {
    tony_strv verbs = {0};
    for (size_t i = 0; i < n; i++)
        if (routes[i].match == AM_MATCH_TASK && !tony_strv_contains(&verbs, routes[i].path))
            tony_strv_push(&verbs, routes[i].path);
    tony_buf b = {0};
    for (size_t i = 0; i < verbs.len; i++) {
        if (i) tony_buf_puts(&b, i + 1 == verbs.len ? last_sep : sep);
        tony_buf_puts(&b, verbs.items[i]);
    }
    tony_strv_free(&verbs);
    char *s = tony_strdup(b.data ? b.data : "");
    tony_buf_free(&b);
    return s;
}

static const char *who_words(am_who who) {
    switch (who) {
    case AM_WHO_ANYONE: return "anyone";
    case AM_WHO_READER: return "read token";
    case AM_WHO_NOTEBOOK: return "read token, or the link's cookie (changes: same origin only)";
    case AM_WHO_CLIENT: return "the job's client, signed";
    case AM_WHO_EXECUTOR: return "the task's executor, signed";
    }
    return "?";
}

char *am_route_markdown(const am_route *routes, size_t n) {
    tony_buf b = {0};
    tony_buf_puts(&b, "| method and path | who | body | what |\n| --- | --- | --- | --- |\n");
    for (size_t i = 0; i < n; i++) {
        const am_route *r = &routes[i];
        const char *method = r->method == AM_METHOD_GET ? "GET" : r->method == AM_METHOD_POST ? "POST" : "ANY";
        switch (r->match) {
        case AM_MATCH_EXACT: tony_buf_printf(&b, "| `%s %s` ", method, r->path); break;
        case AM_MATCH_FILES: tony_buf_printf(&b, "| `%s %s<file>` ", method, r->path); break;
        case AM_MATCH_SUBTREE: tony_buf_printf(&b, "| `%s %s[/<path>]` ", method, r->path); break;
        case AM_MATCH_TASK: tony_buf_printf(&b, "| `%s " AM_API_TASKS "<role>/<index>/%s` ", method, r->path); break;
        }
        tony_buf_printf(&b, "| %s | %s | %s |\n", who_words(r->who), r->body ? r->body : "", r->what);
    }
    char *s = tony_strdup(b.data);
    tony_buf_free(&b);
    return s;
}

const char *am_route_registration_kind(const json_t *body) {
    const json_t *k = json_object_get(body, AM_API_REG_KIND);
    if (k) {
        static const char *const kinds[] = {AM_API_REG_JOIN, AM_API_REG_ADOPT, AM_API_REG_RETURN};
        const char *s = json_string_value(k);
        for (size_t i = 0; s && i < sizeof kinds / sizeof *kinds; i++)
            if (strcmp(s, kinds[i]) == 0) return kinds[i];
        return NULL;
    }
    /* an executor from before the field: its fields tell, as they did */
    if (json_object_get(body, AM_API_ADOPT)) return AM_API_REG_ADOPT;
    return json_is_true(json_object_get(body, AM_API_RETURNING)) ? AM_API_REG_RETURN : AM_API_REG_JOIN;
}
