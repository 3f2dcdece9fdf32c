/* cli/ktune — main of the `ktune` command. Subcommands: bench (the benchmark harness for
 * searchers on replayed caches or a real device: service/bench/, bench_main.h, with ktuned's
 * searchers through ask/tell under --remote: cli_bench_remote.h); tune, jobs, job,
 * cancel, best, models, train, export and import talk to a ktuned (cli.h). */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_bench_remote.h"
#include "core/suggest.h"

static void ktune_usage(FILE *out)
{
    fprintf(out, "usage: ktune <command> [options]\n"
                 "\n"
                 "commands:\n"
                 "  bench   run searchers offline on replayed Kernel Tuner caches, or\n"
                 "          measuring on a real device (--kernel K --device cpu)\n"
                 "          (ktune bench --help for its options)\n"
                 "  tune    submit a tuning job; --wait follows it with a progress bar\n"
                 "  jobs    list jobs            job ID     one job in full\n"
                 "  cancel  cancel a job         best       the best configuration\n"
                 "          (json, -D flags or a C header; measured, predicted or nearest)\n"
                 "  models  list models          models ID  one model with its metrics\n"
                 "  train   train a predictor for a kernel on a device class (--wait)\n"
                 "  export  a job's trials as a Kernel Tuner cache or T4 results file\n"
                 "  import  a Kernel Tuner cache or T4 results file into the server\n"
                 "  (ktune <command> --help for each command's options)\n"
                 "\n" CLI_CONN_TEXT "\n" CLI_EXIT_CODES_TEXT);
}

/* The commands, as git.c's table: a name and the function that runs it (argv[0] its name). */
typedef struct ktune_command {
    const char *name;
    int (*run)(int argc, char **argv);
    int (*run_in)(int argc, char **argv, const char *exe_dir); /* bench: finds its tools there */
} ktune_command;

static const ktune_command ktune_commands[] = {
    {"bench", NULL, cli_bench_main},   {"tune", cli_tune_main, NULL},
    {"jobs", cli_jobs_main, NULL},     {"job", cli_job_main, NULL},
    {"cancel", cli_cancel_main, NULL}, {"best", cli_best_main, NULL},
    {"models", cli_models_main, NULL}, {"train", cli_train_main, NULL},
    {"export", cli_export_main, NULL}, {"import", cli_import_main, NULL},
};

static const ktune_command *ktune_find(const char *name)
{
    for (size_t i = 0; i < sizeof ktune_commands / sizeof ktune_commands[0]; i++) {
        if (strcmp(name, ktune_commands[i].name) == 0)
            return &ktune_commands[i];
    }
    return NULL;
}

int main(int argc, char **argv)
{
    char exe[PATH_MAX];
    const char *exe_dir = NULL;
    const ktune_command *c = NULL;
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
    } else if ((c = ktune_find(argv[1]))) {
        rc = c->run ? c->run(argc - 1, argv + 1) : c->run_in(argc - 1, argv + 1, exe_dir);
    } else if (argv[1][0] == '-') {
        fprintf(stderr, "ktune: unknown option '%s'\n", argv[1]);
        ktune_usage(stderr);
        rc = 2;
    } else {
        /* "did you mean 'tune'?" (issue 31) */
        kt_suggest s;
        char text[KT_SUGGEST_MAX * (KT_SUGGEST_LEN + 8)];
        kt_suggest_init(&s, argv[1]);
        for (size_t i = 0; i < sizeof ktune_commands / sizeof ktune_commands[0]; i++)
            kt_suggest_add(&s, ktune_commands[i].name, (size_t)-1);
        if (kt_suggest_text(&s, text, sizeof text))
            fprintf(stderr,
                    "ktune: unknown command '%s' (did you mean %s? ktune --help lists them)\n",
                    argv[1], text);
        else
            fprintf(stderr, "ktune: unknown command '%s' (ktune --help lists them)\n", argv[1]);
        rc = 2;
    }
    return rc;
}
