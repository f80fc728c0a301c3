/* Staging a job TonY's way: src zipped as tony_src_<appId>.zip, the venv as
 * venv.zip, local resources (dirs zipped and marked #archive) handed to a
 * backend's sink. */
#include "backend/stage.h"

#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/archive.h"
#include "common/fs.h"
#include "common/jobdir.h"
#include "common/proc.h"
#include "common/self.h"
#include "common/strv.h"
#include "common/unpack.h"
#include "conf/resource.h"
#include "conf/keys.h"

int tony_stage_write_secret(const char *job_dir, char **secret, tony_error *err) {
    unsigned char raw[24];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) return tony_err(err, "getrandom: %s", strerror(errno));
    char hex[sizeof raw * 2 + 2];
    for (size_t i = 0; i < sizeof raw; i++) sprintf(hex + 2 * i, "%02x", raw[i]);
    strcat(hex, "\n");
    char *path = tony_path_join(job_dir, TONY_JOBDIR_SECRET);
    int rc = tony_write_file(path, hex, strlen(hex), 0600, err);
    free(path);
    if (rc == 0 && secret) *secret = tony_sprintf("%.*s", (int)(sizeof raw * 2), hex);
    return rc;
}

static bool is_remote(const char *s) { return strstr(s, "://") != NULL; }

/* Stages one resource list (the value of a tony.*.resources key) and returns
 * the rewritten list. */
static int stage_resources(const char *key, const char *list, const char *tmp_dir, const tony_stage_sink *sink,
                           int *counter, char **out, tony_error *err) {
    tony_resource_list rl = {0};
    if (tony_resource_parse_list(list, &rl, err)) return tony_err_wrap(err, "%s", key);
    tony_strv parts = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < rl.len; i++) {
        tony_resource *r = &rl.items[i];
        char *where = NULL;
        bool archive = r->archive;
        if (is_remote(r->source)) {
            rc = sink->remote(sink->ctx, key, r, &where, err);
        } else if (!tony_file_exists(r->source)) {
            rc = tony_err(err, "%s: %s doesn't exist in local filesystem", key, r->source);
        } else {
            int n = (*counter)++;
            char *dest = NULL, *local = NULL;
            if (tony_is_dir(r->source)) {
                dest = tony_sprintf("res%d/%s.zip", n, tony_basename(r->source));
                local = tony_path_join(tmp_dir, dest);
                char *dir = tony_sprintf("%s/res%d", tmp_dir, n);
                rc = tony_mkdir_p(dir, 0700, err);
                free(dir);
                if (rc == 0) rc = tony_archive_zip_dir(r->source, local, err);
                archive = true;
            } else {
                dest = tony_sprintf("res%d/%s", n, tony_basename(r->source));
                local = tony_strdup(r->source);
            }
            if (rc == 0) rc = sink->put(sink->ctx, local, dest, r->name, false, archive, &where, err);
            free(dest);
            free(local);
        }
        if (rc == 0) tony_strv_pushf(&parts, "%s::%s%s", where, r->name, archive ? "#archive" : "");
        free(where);
    }
    tony_resource_list_free(&rl);
    if (rc == 0) *out = tony_strv_join(&parts, ",");
    tony_strv_free(&parts);
    return rc;
}

static int put_job_file(tony_conf *conf, const tony_stage_sink *sink, const char *local, const char *name,
                        tony_error *err) {
    char *where = NULL;
    if (sink->put(sink->ctx, local, name, name, true, false, &where, err)) return -1;
    if (sink->list_job_files) tony_conf_set_cli(conf, TONY_KEY_CONTAINERS_RESOURCES, where);
    free(where);
    return 0;
}

int tony_stage_files(tony_conf *conf, const tony_stage_input *in, const char *app_id, const char *tmp_dir,
                     const tony_stage_sink *sink, tony_error *err) {
    /* Resource keys first, so that the src and venv entries added below are
     * not staged twice. */
    regex_t re;
    regcomp(&re, "^tony\\.([a-z]+)\\.resources$", REG_EXTENDED);
    int counter = 0, rc = 0;
    tony_strv keys = {0};
    for (size_t i = 0; i < tony_conf_size(conf); i++)
        if (regexec(&re, tony_conf_key_at(conf, i), 0, NULL, 0) == 0) tony_strv_push(&keys, tony_conf_key_at(conf, i));
    regfree(&re);
    for (size_t i = 0; rc == 0 && i < keys.len; i++) {
        char *staged = NULL;
        rc = stage_resources(keys.items[i], tony_conf_get(conf, keys.items[i]), tmp_dir, sink, &counter, &staged, err);
        if (rc == 0) tony_conf_set(conf, keys.items[i], staged, "staged");
        free(staged);
    }
    tony_strv_free(&keys);

    if (rc == 0 && in->src_dir) {
        char *name = tony_src_archive_name(app_id);
        char *zip = tony_path_join(tmp_dir, name);
        const char *local = zip;
        if (!tony_file_exists(in->src_dir)) rc = tony_err(err, "--src_dir %s does not exist", in->src_dir);
        else if (tony_is_dir(in->src_dir)) rc = tony_archive_zip_dir(in->src_dir, zip, err);
        else if (tony_archive_is_archive(in->src_dir)) local = in->src_dir;
        else rc = tony_err(err, "--src_dir %s is neither a directory nor a zip/tar archive", in->src_dir);
        if (rc == 0) rc = put_job_file(conf, sink, local, name, err);
        free(name);
        free(zip);
    }
    if (rc == 0 && in->python_venv) {
        if (!tony_file_exists(in->python_venv) || tony_is_dir(in->python_venv))
            rc = tony_err(err, "--python_venv %s must be an existing zip of a virtualenv", in->python_venv);
        else rc = put_job_file(conf, sink, in->python_venv, TONY_VENV_ARCHIVE, err);
    }
    if (rc == 0) tony_conf_set(conf, TONY_KEY_APP_ID, app_id, "client");
    return rc;
}
