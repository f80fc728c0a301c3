/* The Host header check of tony's HTTP servers (see hostcheck.h). */
#include "common/hostcheck.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

void tony_host_check_init(tony_host_check *c, int port, bool any_ip) {
    memset(c, 0, sizeof *c);
    c->port = port;
    c->any_ip = any_ip;
    tony_host_check_add(c, "localhost");
    tony_host_check_add(c, "127.0.0.1");
    tony_host_check_add(c, "::1");
}

void tony_host_check_add(tony_host_check *c, const char *name) {
    if (!name || !*name) return;
    for (size_t i = 0; i < c->names.len; i++)
        if (strcasecmp(name, c->names.items[i]) == 0) return;
    tony_strv_push(&c->names, name);
}

char *tony_host_check_add_this_host(tony_host_check *c) {
    char name[256];
    if (gethostname(name, sizeof name)) return NULL;
    name[sizeof name - 1] = '\0';
    tony_host_check_add(c, name);
    return tony_strdup(name);
}

void tony_host_check_init_job_server(tony_host_check *c, int port, const char *own_name) {
    tony_host_check_init(c, port, true);
    tony_host_check_add(c, own_name);
    free(tony_host_check_add_this_host(c));
}

bool tony_host_check_ok(const tony_host_check *c, const char *host) {
    if (!host) return false;
    /* [v6]:port, [v6], name:port, name */
    const char *end, *colon;
    if (*host == '[') {
        end = strchr(host, ']');
        if (!end) return false;
        colon = end[1] == ':' ? end + 1 : NULL;
        if (end[1] && !colon) return false;
    } else {
        colon = strchr(host, ':');
        if (colon && strchr(colon + 1, ':')) return false;
        end = colon ? colon : host + strlen(host);
    }
    if (colon) {
        long long port;
        const char *ps = colon + 1;
        if (!*ps || strspn(ps, "0123456789") != strlen(ps) || strlen(ps) > 5 || !tony_parse_ll(ps, &port) ||
            port != c->port)
            return false;
    }
    const char *name = host + (*host == '[');
    size_t len = (size_t)(end - name);
    char buf[256];
    if (len == 0 || len >= sizeof buf) return false;
    memcpy(buf, name, len);
    buf[len] = '\0';
    for (size_t i = 0; i < c->names.len; i++)
        if (strcasecmp(buf, c->names.items[i]) == 0) return true;
    unsigned char addr[sizeof(struct in6_addr)];
    return c->any_ip && (inet_pton(AF_INET, buf, addr) == 1 || inet_pton(AF_INET6, buf, addr) == 1);
}

char *tony_host_check_describe(const tony_host_check *c) {
    char *names = tony_strv_join(&c->names, ", ");
    char *s = tony_sprintf("%s%s", names, c->any_ip ? " or any address of this machine" : "");
    free(names);
    return s;
}

void tony_host_check_free(tony_host_check *c) { tony_strv_free(&c->names); }
