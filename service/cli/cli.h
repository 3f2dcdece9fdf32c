/* cli/cli — the subcommands of `ktune` that talk to a running ktuned, and the exit codes they share
 * (scripts branch on them; `ktune --help` and README.md print the same table). Each *_main takes
 * argv with argv[0] the subcommand name, prints results on stdout and errors on stderr (the API's
 * message and hint as the server wrote them), and returns one of the codes below. */
#ifndef KT_CLI_CLI_H
#define KT_CLI_CLI_H

enum {
    CLI_EXIT_OK = 0,            /* done; for tune --wait: the job succeeded */
    CLI_EXIT_FAILURE = 1,       /* a local failure: a file that cannot be read, written or parsed */
    CLI_EXIT_USAGE = 2,         /* bad command line */
    CLI_EXIT_UNREACHABLE = 3,   /* no answer from the server (refused, timeout, not ktuned) */
    CLI_EXIT_REJECTED = 4,      /* the server refused the request (400, 409, 413, ...) */
    CLI_EXIT_NOT_FOUND = 5,     /* 404: no such job, or nothing known for `best` */
    CLI_EXIT_UNAUTHORIZED = 6,  /* 401: the API token is missing or wrong */
    CLI_EXIT_SERVER_ERROR = 7,  /* 5xx: the server failed (database down, internal error) */
    CLI_EXIT_JOB_FAILED = 8,    /* tune --wait: the job ended as failed; train --wait: the model */
    CLI_EXIT_JOB_CANCELLED = 9, /* tune --wait: the job was cancelled */
};

/* The exit-code table and the connection options, for usage texts. */
#define CLI_EXIT_CODES_TEXT                                                                        \
    "Exit codes: 0 done (tune --wait: the job succeeded), 1 local failure (a file),\n"             \
    "  2 usage error, 3 server unreachable, 4 request rejected by the server (4xx),\n"             \
    "  5 not found (no such job; best: nothing known), 6 unauthorized (token),\n"                  \
    "  7 server error (5xx), 8 job (train --wait: model) failed, 9 job cancelled.\n"
#define CLI_CONN_TEXT                                                                              \
    "Server options (every subcommand; bench only with --remote):\n"                               \
    "  --server URL   ktuned's address [KTUNE_SERVER, else http://127.0.0.1:8080]\n"               \
    "  --token T      API token sent as 'Authorization: Bearer T' [KTUNE_TOKEN]\n"                 \
    "  --timeout S    seconds per request, 1-3600 [KTUNE_TIMEOUT, else 60]\n"

int cli_tune_main(int argc, char **argv);   /* cli_tune.c */
int cli_jobs_main(int argc, char **argv);   /* cli_jobs.c: ktune jobs */
int cli_job_main(int argc, char **argv);    /* ktune job ID */
int cli_cancel_main(int argc, char **argv); /* ktune cancel ID */
int cli_best_main(int argc, char **argv);   /* cli_best.c */
int cli_export_main(int argc, char **argv); /* cli_transfer.c */
int cli_import_main(int argc, char **argv);
int cli_models_main(int argc, char **argv); /* cli_models.c: ktune models [ID] */
int cli_train_main(int argc, char **argv);  /* ktune train */

#endif
