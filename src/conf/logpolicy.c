/* tony.application.log-policies: the value's syntax (ACTION:REGEX entries
 * separated by commas, as TonY's list values are) and its compilation into
 * POSIX extended regular expressions. */
#include "conf/logpolicy.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/strv.h"

#define CASELESS "(?i)"

const char *tony_logpolicy_action_name(tony_logpolicy_action a) {
    return a == TONY_LOGPOLICY_FAIL ? "fail" : "exclude-node";
}

bool tony_logpolicy_action_parse(const char *word, tony_logpolicy_action *out) {
    if (strcmp(word, "fail") == 0) *out = TONY_LOGPOLICY_FAIL;
    else if (strcmp(word, "exclude-node") == 0) *out = TONY_LOGPOLICY_EXCLUDE_NODE;
    else return false;
    return true;
}

const char *tony_logpolicies_value(const tony_conf *c) {
    const char *v = tony_conf_get(c, TONY_LOGPOLICY_KEY);
    return v ? v : TONY_LOGPOLICY_DEFAULTS;
}

void tony_logpolicies_free(tony_logpolicies *p) {
    for (size_t i = 0; i < p->len; i++) {
        free(p->items[i].text);
        regfree(&p->items[i].re);
    }
    free(p->items);
    memset(p, 0, sizeof *p);
}

/* Splits at commas not escaped as "\,", which become plain commas; each
 * entry trimmed (a tony.xml value may span lines), empty ones dropped. */
static void split_entries(const char *v, tony_strv *out) {
    tony_buf cur = {0};
    tony_buf_puts(&cur, "");
    for (const char *p = v;; p++) {
        if (*p == '\\' && p[1] == ',') {
            tony_buf_append(&cur, ",", 1);
            p++;
            continue;
        }
        if (*p == ',' || *p == '\0') {
            char *s = cur.data;
            size_t n = cur.len;
            while (n && isspace((unsigned char)*s)) s++, n--;
            while (n && isspace((unsigned char)s[n - 1])) n--;
            if (n) tony_strv_pushf(out, "%.*s", (int)n, s);
            cur.len = 0;
            cur.data[0] = '\0';
            if (*p == '\0') break;
            continue;
        }
        tony_buf_append(&cur, p, 1);
    }
    tony_buf_free(&cur);
}

int tony_logpolicies_parse(const char *value, tony_logpolicies *out, tony_error *err) {
    memset(out, 0, sizeof *out);
    tony_strv entries = {0};
    split_entries(value ? value : TONY_LOGPOLICY_DEFAULTS, &entries);
    out->items = tony_xcalloc(entries.len + 1, sizeof *out->items);
    int rc = 0;
    for (size_t i = 0; i < entries.len && rc == 0; i++) {
        const char *e = entries.items[i], *colon = strchr(e, ':');
        char *word = colon ? tony_sprintf("%.*s", (int)(colon - e), e) : tony_strdup(e);
        tony_logpolicy_action action;
        if (!colon || !tony_logpolicy_action_parse(word, &action)) {
            rc = tony_err(err, "%s: entry '%s' is not ACTION:REGEX with ACTION fail or exclude-node "
                               "(e.g. fail:CUDA out of memory; write \\, for a comma inside a regex)",
                          TONY_LOGPOLICY_KEY, e);
        } else {
            const char *pattern = colon + 1;
            int flags = REG_EXTENDED | REG_NOSUB;
            if (strncmp(pattern, CASELESS, strlen(CASELESS)) == 0) {
                pattern += strlen(CASELESS);
                flags |= REG_ICASE;
            }
            tony_logpolicy *p = &out->items[out->len];
            int rrc = *pattern ? regcomp(&p->re, pattern, flags) : REG_BADPAT;
            if (rrc) {
                char why[160] = "an empty regex matches every line";
                if (*pattern) regerror(rrc, &p->re, why, sizeof why);
                rc = tony_err(err, "%s: entry '%s' has a bad regular expression (POSIX extended): %s",
                              TONY_LOGPOLICY_KEY, e, why);
            } else {
                p->action = action;
                p->text = tony_strdup(e);
                out->len++;
            }
        }
        free(word);
    }
    tony_strv_free(&entries);
    if (rc) tony_logpolicies_free(out);
    return rc;
}
