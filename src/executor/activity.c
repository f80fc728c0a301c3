/* Signs of life of the user's process, from its output files and its
 * progress file (see activity.h). */
#include "executor/activity.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/strv.h"

static void look(tony_activity_file *f, long long *size, long long *mtime_ns) {
    struct stat st;
    if (stat(f->path, &st) != 0) {
        *size = *mtime_ns = -1;
        return;
    }
    *size = (long long)st.st_size;
    *mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
}

void tony_activity_init(tony_activity *a, const char *const *paths, size_t n, long long now_ms) {
    memset(a, 0, sizeof *a);
    for (size_t i = 0; i < n && a->n < TONY_ACTIVITY_FILES; i++) {
        if (!paths[i]) continue;
        tony_activity_file *f = &a->files[a->n++];
        f->path = tony_strdup(paths[i]);
        look(f, &f->size, &f->mtime_ns);
    }
    a->last_ms = now_ms;
}

long long tony_activity_idle_ms(tony_activity *a, long long now_ms) {
    for (size_t i = 0; i < a->n; i++) {
        tony_activity_file *f = &a->files[i];
        long long size, mtime;
        look(f, &size, &mtime);
        if (size != f->size || mtime != f->mtime_ns) a->last_ms = now_ms;
        f->size = size;
        f->mtime_ns = mtime;
    }
    return now_ms > a->last_ms ? now_ms - a->last_ms : 0;
}

void tony_activity_free(tony_activity *a) {
    for (size_t i = 0; i < a->n; i++) free(a->files[i].path);
    memset(a, 0, sizeof *a);
}
