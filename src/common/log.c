/* Logger state is the one piece of global state besides the event loop. */
#include "common/log.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/clock.h"

static struct {
    char who[128];
    FILE *out;
    tony_log_level threshold;
} logger = {"tony", NULL, TONY_LOG_INFO};

void tony_log_init(const char *who, FILE *out) {
    snprintf(logger.who, sizeof logger.who, "%s", who);
    logger.out = out;
    const char *lvl = getenv("TONY_LOG_LEVEL");
    if (lvl) {
        if (!strcasecmp(lvl, "debug")) logger.threshold = TONY_LOG_DEBUG;
        else if (!strcasecmp(lvl, "warn")) logger.threshold = TONY_LOG_WARN;
        else if (!strcasecmp(lvl, "error")) logger.threshold = TONY_LOG_ERROR;
    }
}

void tony_log(tony_log_level level, const char *fmt, ...) {
    if (level < logger.threshold) return;
    static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    FILE *out = logger.out ? logger.out : stderr;
    long long ms = tony_wall_ms();
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&sec, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(out, "%s.%03d %-5s [%s] %s\n", ts, (int)(ms % 1000), names[level], logger.who, line);
    fflush(out);
}
