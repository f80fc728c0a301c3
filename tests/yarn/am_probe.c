/* A tiny ApplicationMaster that proves tony's YARN wire code on a real
 * cluster: submitted by tests/e2e/test_yarn_wire.py, it registers with the RM
 * using the AMRMToken from its token file, gets a plain and a GPU container,
 * starts a command in each through their NodeManagers, stops one, checks the
 * exit statuses YARN reports and that a wrong token is refused, then
 * unregisters SUCCEEDED (FAILED naming every failed check). Lines starting
 * "CHECK" and "FACT" on stdout are read by the test. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/yarn/amrm.h"
#include "backend/yarn/ipc.h"
#include "backend/yarn/nm.h"
#include "backend/yarn/tokens.h"
#include "common/log.h"
#include "common/strv.h"

typedef struct probe {
    tony_buf failures;
    int n_failed;
} probe;

__attribute__((format(printf, 4, 5))) static bool check(probe *p, bool ok, const char *name, const char *fmt, ...) {
    char detail[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    printf("CHECK %s %s: %s\n", ok ? "ok" : "FAIL", name, detail);
    fflush(stdout);
    if (!ok) {
        p->n_failed++;
        tony_buf_printf(&p->failures, "%s: %s; ", name, detail);
    }
    return ok;
}

#define FACT(...)                 \
    do {                          \
        printf("FACT " __VA_ARGS__); \
        printf("\n");             \
        fflush(stdout);           \
    } while (0)

static const char *env_or(const char *k, const char *dflt) {
    const char *v = getenv(k);
    return v && *v ? v : dflt;
}

/* Heartbeats until want(ctx) says enough or timeout; every allocation is
 * handed to take(). */
typedef bool (*take_fn)(void *ctx, yarn_amrm *am, const yarn_allocation *a);

static int heartbeat_until(yarn_amrm *am, take_fn take, void *ctx, int timeout_ms, tony_error *err) {
    for (int waited = 0; waited <= timeout_ms; waited += 250) {
        yarn_allocation a;
        if (yarn_amrm_allocate(am, 0.5f, &a, err) < 0) return -1;
        bool done = take(ctx, am, &a);
        yarn_allocation_free(&a);
        if (done) return 0;
        tony_sleep_ms(250);
    }
    return tony_err(err, "timed out after %d ms", timeout_ms);
}

typedef struct state {
    yarn_container plain, gpu, extra;
    bool have_plain, have_gpu, have_extra;
    int exit_plain, exit_gpu, exit_extra;
    bool done_plain, done_gpu, done_extra;
    char diag_gpu[512], diag_extra[512];
    int unexpected;
} state;

/* Records completions; also called while still waiting for allocations,
 * because the released container's completion can come back before the
 * last container is granted (the RM hands out one node per heartbeat). */
static bool note_completed(state *s, const yarn_allocation *a) {
    for (size_t i = 0; i < a->n_completed; i++) {
        const yarn_completed *c = &a->completed[i];
        FACT("completed %s exit %d diagnostics: %s", c->id, c->exit_status, c->diagnostics);
        if (s->have_plain && strcmp(c->id, s->plain.id) == 0) s->done_plain = true, s->exit_plain = c->exit_status;
        if (s->have_gpu && strcmp(c->id, s->gpu.id) == 0) {
            s->done_gpu = true, s->exit_gpu = c->exit_status;
            snprintf(s->diag_gpu, sizeof s->diag_gpu, "%s", c->diagnostics);
        }
        if (s->have_extra && strcmp(c->id, s->extra.id) == 0) {
            s->done_extra = true, s->exit_extra = c->exit_status;
            snprintf(s->diag_extra, sizeof s->diag_extra, "%s", c->diagnostics);
        }
    }
    return s->done_plain && s->done_gpu && s->done_extra;
}

static bool take_completed(void *ctx, yarn_amrm *am, const yarn_allocation *a) {
    (void)am;
    return note_completed(ctx, a);
}

static bool take_allocated(void *ctx, yarn_amrm *am, const yarn_allocation *a) {
    state *s = ctx;
    for (size_t i = 0; i < a->n_allocated; i++) {
        const yarn_container *c = &a->allocated[i];
        FACT("allocated %s prio %d on %s:%d http %s: %lld MB %d vcores %d gpus", c->id, c->priority, c->node_host,
             c->node_port, c->node_http_address, c->resource.memory_mb, c->resource.vcores, c->resource.gpus);
        yarn_container *slot = c->priority == 1 && !s->have_plain ? (s->have_plain = true, &s->plain)
                               : c->priority == 2 && !s->have_gpu ? (s->have_gpu = true, &s->gpu)
                               : c->priority == 3 && !s->have_extra ? (s->have_extra = true, &s->extra)
                                                                    : NULL;
        if (slot) {
            yarn_container_copy(slot, c);
        } else {
            s->unexpected++;
            yarn_amrm_release(am, c);
        }
        if (c->priority == 3) yarn_amrm_release(am, c); /* given back at once: tests release */
    }
    note_completed(s, a);
    return s->have_plain && s->have_gpu && s->have_extra;
}

static void run(probe *p, yarn_amrm *am, const yarn_credentials *creds) {
    tony_error err;
    yarn_register_info info;
    if (yarn_amrm_register(am, env_or("NM_HOST", "localhost"), -1, "", &info, &err) < 0) {
        check(p, false, "register", "%s", err.msg);
        return;
    }
    FACT("register: queue %s, max %lld MB %d vcores %d gpus, %zu previous containers", info.queue,
         info.max_capability.memory_mb, info.max_capability.vcores, info.max_capability.gpus, info.n_previous);
    check(p, info.has_gpu_type, "gpu resource type", "yarn.io/gpu %s", info.has_gpu_type ? "offered" : "missing");
    yarn_register_info_free(&info);

    const char *want_secret = getenv("TONY_PROBE_SECRET");
    if (want_secret) {
        const yarn_secret *sec = yarn_credentials_find_secret(creds, "tony.job.secret");
        check(p, sec && sec->len == strlen(want_secret) && memcmp(sec->data, want_secret, sec->len) == 0,
              "secret from REST credentials", "%s", sec ? "found" : "missing");
    }

    const yarn_resource plain = {256, 1, 0}, gpu = {256, 1, 1};
    yarn_amrm_add_request(am, 1, &plain, NULL, 1);
    yarn_amrm_add_request(am, 2, &gpu, "gpu", 1);
    yarn_amrm_add_request(am, 3, &plain, NULL, 1);
    state s = {0};
    int rc;
    rc = heartbeat_until(am, take_allocated, &s, 60000, &err);
    if (!check(p, rc == 0, "allocate", "%s", rc == 0 ? "3 containers" : err.msg)) goto out;
    check(p, s.gpu.resource.gpus == 1, "gpu container", "%d gpus", s.gpu.resource.gpus);
    check(p, yarn_amrm_outstanding(am, 1, &plain, NULL) == 0 && yarn_amrm_outstanding(am, 2, &gpu, "gpu") == 0,
          "ask table filled", "outstanding %d/%d", yarn_amrm_outstanding(am, 1, &plain, NULL),
          yarn_amrm_outstanding(am, 2, &gpu, "gpu"));
    check(p, s.unexpected == 0, "no surplus containers", "%d", s.unexpected);

    yarn_nm_pool *pool = yarn_nm_pool_new(am, NULL);
    tony_env env = {0};
    tony_env_set(&env, "PROBE_VAR", "hello from the probe");
    yarn_local_resource res = {"probe_copy", env_or("TONY_PROBE_RESOURCE_URI", ""),
                               atoll(env_or("TONY_PROBE_RESOURCE_SIZE", "0")),
                               atoll(env_or("TONY_PROBE_RESOURCE_TIMESTAMP", "0")), YARN_LR_FILE, YARN_LR_APPLICATION};
    yarn_launch_ctx c1 = {&res, 1, &env,
                          "{ echo probe-var=$PROBE_VAR; ls -l probe_copy; } 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr; "
                          "test -f probe_copy && exit 3; exit 4",
                          NULL, 0};
    rc = yarn_nm_start(pool, &s.plain, &c1, &err);
    check(p, rc == 0, "start plain", "%s", rc == 0 ? "started" : err.msg);
    yarn_launch_ctx c2 = {NULL, 0, NULL, "sleep 300 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr", NULL, 0};
    rc = yarn_nm_start(pool, &s.gpu, &c2, &err);
    check(p, rc == 0, "start gpu", "%s", rc == 0 ? "started" : err.msg);

    /* Starting the same container twice is the NM's business to refuse. */
    tony_error again;
    rc = yarn_nm_start(pool, &s.gpu, &c2, &again);
    check(p, rc < 0, "second start refused", "%s", rc < 0 ? again.msg : "accepted!");
    FACT("second start: %s", rc < 0 ? again.msg : "accepted");

    yarn_container_status st = {0};
    for (int i = 0; i < 120; i++) {
        yarn_container_status_free(&st);
        if (yarn_nm_status(pool, &s.gpu, &st, &err) < 0) break;
        if (st.state == YARN_CSTATE_RUNNING) break;
        tony_sleep_ms(250);
    }
    check(p, st.state == YARN_CSTATE_RUNNING, "status running", "state %d exit %d %s", st.state, st.exit_status,
          st.state ? st.diagnostics : err.msg);
    yarn_container_status_free(&st);
    rc = yarn_nm_stop(pool, &s.gpu, &err);
    check(p, rc == 0, "stop gpu", "%s", rc == 0 ? "stopped" : err.msg);

    /* A token with a wrong password must be refused, clearly. */
    yarn_token *bad = yarn_token_dup(yarn_amrm_token(am));
    bad->password[0] ^= 0x5a;
    const char *addr = getenv("TONY_YARN_SCHEDULER_ADDRESS");
    char host[256];
    int port = 0;
    sscanf(addr, "%255[^:]:%d", host, &port);
    yarn_ipc *ipc = NULL;
    rc = yarn_ipc_connect(host, port, YARN_AM_PROTOCOL, bad, 10000, &ipc, &err);
    check(p, rc < 0, "wrong password refused", "%s", rc < 0 ? err.msg : "accepted!");
    FACT("wrong AMRM password: %s", rc < 0 ? err.msg : "accepted");
    yarn_ipc_free(ipc);
    yarn_token_free(bad);

    rc = heartbeat_until(am, take_completed, &s, 60000, &err);
    if (check(p, rc == 0, "completions", "%s", rc == 0 ? "all three" : err.msg)) {
        check(p, s.exit_plain == 3, "plain exit status", "%d", s.exit_plain);
        check(p, s.exit_gpu == -105, "stopped exit status", "%d (%s)", s.exit_gpu, s.diag_gpu);
        check(p, s.exit_extra == -100, "released exit status", "%d (%s)", s.exit_extra, s.diag_extra);
    }
    /* After completion the NM may still know the container. */
    if (yarn_nm_status(pool, &s.plain, &st, &err) == 0) {
        FACT("status after exit: state %d exit %d diagnostics: %s", st.state, st.exit_status, st.diagnostics);
        yarn_container_status_free(&st);
    } else {
        FACT("status after exit: %s", err.msg);
    }
    tony_env_free(&env);
    yarn_nm_pool_free(pool);
out:
    yarn_container_free(&s.plain);
    yarn_container_free(&s.gpu);
    yarn_container_free(&s.extra);
}

int main(void) {
    tony_log_init("am_probe", NULL);
    probe p = {0};
    tony_error err;
    yarn_credentials *creds = NULL;
    const char *tf = getenv("HADOOP_TOKEN_FILE_LOCATION");
    const char *addr = getenv("TONY_YARN_SCHEDULER_ADDRESS");
    char host[256] = "";
    int port = 0;
    if (!tf || yarn_credentials_read_file(tf, &creds, &err) < 0) {
        printf("CHECK FAIL token file: %s\n", tf ? err.msg : "HADOOP_TOKEN_FILE_LOCATION unset");
        return 2;
    }
    for (size_t i = 0; i < creds->n_tokens; i++)
        FACT("token alias '%s' kind %s service '%s' id %zu bytes", creds->tokens[i].alias,
             creds->tokens[i].token->kind, creds->tokens[i].token->service, creds->tokens[i].token->identifier_len);
    for (size_t i = 0; i < creds->n_secrets; i++) FACT("secret alias '%s' %zu bytes", creds->secrets[i].alias,
                                                       creds->secrets[i].len);
    if (!addr || sscanf(addr, "%255[^:]:%d", host, &port) != 2) {
        printf("CHECK FAIL scheduler address: TONY_YARN_SCHEDULER_ADDRESS='%s'\n", addr ? addr : "");
        yarn_credentials_free(creds);
        return 2;
    }
    yarn_amrm *am = yarn_amrm_new(host, port, yarn_credentials_find_kind(creds, YARN_AMRM_TOKEN_KIND), &err);
    if (!am) {
        printf("CHECK FAIL amrm: %s\n", err.msg);
        yarn_credentials_free(creds);
        return 2;
    }
    run(&p, am, creds);
    char *diag = p.n_failed ? tony_sprintf("%d probe checks failed: %s", p.n_failed, p.failures.data)
                            : tony_strdup("all probe checks passed");
    int rc = yarn_amrm_finish(am, p.n_failed ? YARN_FINAL_FAILED : YARN_FINAL_SUCCEEDED, diag, "", 20000, &err);
    printf("CHECK %s finish: %s\n", rc == 0 ? "ok" : "FAIL", rc == 0 ? diag : err.msg);
    printf("PROBE %s\n", p.n_failed || rc ? "FAILED" : "PASSED");
    free(diag);
    tony_buf_free(&p.failures);
    yarn_amrm_free(am);
    yarn_credentials_free(creds);
    return p.n_failed || rc ? 1 : 0;
}
