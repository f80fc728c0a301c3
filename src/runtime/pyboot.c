/* The sitecustomize.py tony writes for a task's Python processes (pyboot.h):
 * the variables that came by file set in os.environ, the framework's
 * start-up modules imported, then the hidden sitecustomize run. */
#include "runtime/pyboot.h"

#include <stdlib.h>
#include <string.h>

#include "common/fs.h"
#include "common/strv.h"
#include "common/taskenv.h"

/* Before the list of modules to import at start. */
static const char site_head[] =
    "# tony's start-up for this task's Python processes: the variables too long\n"
    "# for the environment set from their files, tony's modules that must come\n"
    "# first, then the sitecustomize this one hides. Written by tony's executor;\n"
    "# see tony's docs/frameworks.md (\"Job size\").\n"
    "import importlib\n"
    "import importlib.util\n"
    "import os\n"
    "import sys\n"
    "\n";

/* After it. The variables are set in os.environ's mapping and not in the
 * C environment (putenv): a program this process starts with its env would
 * otherwise meet the very limit that sent the value by file, and fail with
 * E2BIG; a Python one reads the files again (TONY_ENV_FILES and PYTHONPATH
 * stay in the environment). Where the mapping is not CPython's, it is set
 * the ordinary way. */
static const char site_body[] =
    "\n"
    "\n"
    "def _tony_env_files():\n"
    "    env = os.environ\n"
    "    for item in env.get(\"" TASKENV_ENV_FILES "\", \"\").split(\":\"):\n"
    "        key, eq, path = item.partition(\"=\")\n"
    "        if not key or not eq:\n"
    "            continue\n"
    "        try:\n"
    "            with open(path, \"rb\") as f:\n"
    "                value = f.read()\n"
    "        except OSError as e:\n"
    "            sys.stderr.write(\"tony: cannot set %s from %s: %s\\n\" % (key, path, e))\n"
    "            continue\n"
    "        try:\n"
    "            env._data[env.encodekey(key)] = value\n"
    "        except (AttributeError, TypeError):\n"
    "            env[key] = value.decode(sys.getfilesystemencoding(), \"surrogateescape\")\n"
    "\n"
    "\n"
    "def _tony_next_sitecustomize():\n"
    "    here = os.path.dirname(os.path.abspath(__file__))\n"
    "    for d in sys.path:\n"
    "        p = os.path.join(os.path.abspath(d or \".\"), \"sitecustomize.py\")\n"
    "        if os.path.dirname(p) == here or not os.path.isfile(p):\n"
    "            continue\n"
    "        spec = importlib.util.spec_from_file_location(\"_tony_hidden_sitecustomize\", p)\n"
    "        spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
    "        return\n"
    "\n"
    "\n"
    "_tony_env_files()\n"
    "for _tony_module in _TONY_AT_START:\n"
    "    importlib.import_module(_tony_module)\n"
    "_tony_next_sitecustomize()\n";

static int write_py(const char *dir, const char *name, const char *text, tony_error *err) {
    char *file = tony_sprintf("%s.py", name);
    char *path = tony_path_join(dir, file);
    int rc = tony_write_file(path, text, strlen(text), 0644, err);
    free(path);
    free(file);
    return rc;
}

int tony_pyboot_write(const char *dir, const tony_pyboot_module *mods, size_t n, tony_env *env, tony_error *err) {
    if (tony_mkdir_p(dir, 0755, err)) return -1;
    tony_buf site = {0};
    tony_buf_puts(&site, site_head);
    tony_buf_puts(&site, "_TONY_AT_START = (");
    for (size_t i = 0; i < n; i++) {
        if (write_py(dir, mods[i].name, mods[i].text, err)) {
            tony_buf_free(&site);
            return -1;
        }
        if (mods[i].at_start) tony_buf_printf(&site, "\"%s\", ", mods[i].name);
    }
    tony_buf_puts(&site, ")\n");
    tony_buf_puts(&site, site_body);
    int rc = write_py(dir, "sitecustomize", site.data, err);
    tony_buf_free(&site);
    if (rc) return -1;
    const char *had = tony_env_get(env, "PYTHONPATH");
    if (!had) had = getenv("PYTHONPATH");
    if (had && *had) {
        char *v = tony_sprintf("%s:%s", dir, had);
        tony_env_set(env, "PYTHONPATH", v);
        free(v);
    } else {
        tony_env_set(env, "PYTHONPATH", dir);
    }
    return 0;
}
