/* cli/ktune — main of the `ktune` command. Subcommands: bench (the offline benchmark harness for
 * searchers, bench.h); the others are announced in the README and not implemented yet. */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

static void ktune_usage(FILE *out)
{
    fprintf(out, "usage: ktune <command> [options]\n"
                 "\n"
                 "commands:\n"
                 "  bench   run searchers offline on replayed Kernel Tuner caches\n"
                 "          (ktune bench --help for its options)\n"
                 "\n"
                 "Exit codes: 0 done, 1 failure, 2 usage error.\n");
}

int main(int argc, char **argv)
{
    char exe[PATH_MAX];
    const char *exe_dir = NULL;
    int rc = 2;

    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        exe_dir = dirname(exe);
    }
    if (argc < 2) {
        ktune_usage(stderr);
        rc = 2;
    } else if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
               strcmp(argv[1], "help") == 0) {
        ktune_usage(stdout);
        rc = 0;
    } else if (strcmp(argv[1], "bench") == 0) {
        rc = bench_main(argc - 1, argv + 1, exe_dir);
    } else if (argv[1][0] == '-') {
        fprintf(stderr, "ktune: unknown option '%s'\n", argv[1]);
        ktune_usage(stderr);
        rc = 2;
    } else {
        fprintf(stderr, "ktune %s: not implemented yet: see README\n", argv[1]);
        rc = 2;
    }
    return rc;
}
