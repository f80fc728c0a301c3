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

static const char *const level_names[] = {"DEBUG", "INFO", "WARN", "ERROR"};

void tony_log(tony_log_level level, const char *fmt, ...) {
    if (level < logger.threshold) return;
    const char *const *names = level_names;
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

char *tony_log_last_message(const char *text, tony_log_level level) {
    /* "<date> <time>.<ms> LEVEL [who] message": the level padded to 5 */
    char mark[16];
    snprintf(mark, sizeof mark, " %-5s [", level_names[level]);
    const char *found = NULL, *end = NULL;
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        const char *stop = nl ? nl : line + strlen(line);
        const char *m = strstr(line, mark);
        const char *who_end = m && m < stop ? memchr(m, ']', (size_t)(stop - m)) : NULL;
        if (who_end && who_end + 2 <= stop && who_end[1] == ' ') {
            found = who_end + 2;
            end = stop;
        }
        line = nl ? nl + 1 : NULL;
    }
    return found ? strndup(found, (size_t)(end - found)) : NULL;
}
