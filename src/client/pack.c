/* `tony pack OUT.tar.gz [--prefix DIR/]`: writes this tony as a
 * self-contained archive (common/self.h), the one `make dist` turns into the
 * tarball, the wheel and the .deb, and the one the yarn backend localizes. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "client/client.h"
#include "common/self.h"

int tony_cmd_pack(int argc, char **argv) {
    const char *out = NULL, *prefix = "";
    bool usage = false;
    for (int i = 0; i < argc && !usage; i++) {
        if (strcmp(argv[i], "--prefix") == 0 && i + 1 < argc) prefix = argv[++i];
        else if (argv[i][0] != '-' && !out) out = argv[i];
        else usage = true; /* --help, an unknown flag, a second OUT */
    }
    bool help = argc == 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0);
    if (!out || usage) {
        fprintf(help ? stdout : stderr,
                "usage: tony pack OUT.tar.gz [--prefix DIR/]   (a self-contained tony, as `make dist` ships)\n");
        return help ? TONY_EXIT_OK : TONY_EXIT_USAGE;
    }
    tony_self self;
    tony_error err;
    int rc = tony_self_find(&self, &err);
    if (rc == 0) rc = tony_self_pack(&self, out, prefix, &err);
    tony_self_free(&self);
    if (rc) {
        fprintf(stderr, "tony: %s\n", err.msg);
        return TONY_EXIT_USAGE;
    }
    return TONY_EXIT_OK;
}
