/* tony_error: fixed-size messages so that reporting an error never fails. */
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int tony_err(tony_error *err, const char *fmt, ...) {
    if (!err) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int tony_err_wrap(tony_error *err, const char *fmt, ...) {
    if (!err) return -1;
    char prefix[1024], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    /* Truncation is acceptable: the start of the message says the most. */
    size_t n = strlen(prefix);
    memcpy(err->msg, prefix, n);
    size_t room = sizeof err->msg - n;
    if (room > 2) {
        err->msg[n] = ':';
        err->msg[n + 1] = ' ';
        strncpy(err->msg + n + 2, old, room - 3);
        err->msg[sizeof err->msg - 1] = '\0';
    } else {
        err->msg[sizeof err->msg - 1] = '\0';
    }
    return -1;
}
