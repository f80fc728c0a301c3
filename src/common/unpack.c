/* Unpacking the staged source and venv archives in a task's work dir. */
#include "common/unpack.h"

#include <stdlib.h>
#include <sys/stat.h>

#include "common/archive.h"
#include "common/fs.h"
#include "common/strv.h"

char *tony_src_archive_name(const char *app_id) { return tony_sprintf("tony_src_%s.zip", app_id); }

int tony_unpack_job_files(const char *work_dir, const char *app_id, tony_error *err) {
    char *name = tony_src_archive_name(app_id);
    char *src = tony_path_join(work_dir, name);
    int rc = 0;
    if (tony_file_exists(src) && tony_archive_extract(src, work_dir, err))
        rc = tony_err_wrap(err, "unpacking the source archive %s", name);
    free(name);
    free(src);
    if (rc) return rc;
    char *venv = tony_path_join(work_dir, TONY_VENV_ARCHIVE);
    char *dir = tony_path_join(work_dir, TONY_VENV_DIR);
    struct stat st;
    if (tony_file_exists(venv) && lstat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
        /* Only the source archive can have put it there; following a link
         * would unpack the venv wherever it points. */
        rc = tony_err(err,
                      "the source archive has an entry '%s' that is %s, where the python venv (%s) is unpacked; "
                      "rename or remove '%s' in the archive given to --src_dir",
                      TONY_VENV_DIR, S_ISLNK(st.st_mode) ? "a symlink" : "not a directory", TONY_VENV_ARCHIVE,
                      TONY_VENV_DIR);
    else if (tony_file_exists(venv) && tony_archive_extract(venv, dir, err))
        rc = tony_err_wrap(err, "unpacking the python venv %s", TONY_VENV_ARCHIVE);
    free(venv);
    free(dir);
    return rc;
}
