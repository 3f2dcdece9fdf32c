#include "core/config.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/number.h"

/* OPT_BOOL: an int 0/1; the flag alone means 1 (--flag=0 or an env value 0/1 also work). */
typedef enum { OPT_STRING, OPT_INT, OPT_LLONG, OPT_DOUBLE, OPT_BOOL } opt_kind;

typedef struct config_option {
    const char *flag;
    const char *env;
    opt_kind kind;
    size_t offset;
    size_t size; /* strings: buffer size */
    double min, max;
    const char *help;
} config_option;

#define STR(field) OPT_STRING, offsetof(kt_config, field), sizeof(((kt_config *)0)->field), 0, 0
static const config_option options[] = {
    {"--listen", "KTUNE_LISTEN", STR(listen), "address and port to serve HTTP on [127.0.0.1:8080]"},
    {"--data-dir", "KTUNE_DATA_DIR", STR(data_dir),
     "folder for the embedded database and state [./var]"},
    {"--database-url", "KTUNE_DATABASE_URL", STR(database_url),
     "PostgreSQL connection URL; when set, no embedded database is started"},
    {"--datasets", "KTUNE_DATASETS", STR(datasets),
     "comma-separated folders of replay datasets (Kernel Tuner cache files) [<install>/datasets]"},
    {"--web-dir", "KTUNE_WEB_DIR", STR(web_dir),
     "folder of the dashboard's static files [<install>/web]"},
    {"--api-token", "KTUNE_API_TOKEN", STR(api_token),
     "an admin API token (scopes read, tune, admin) given at start-up; when any token exists "
     "every request but /healthz and static files needs 'Authorization: Bearer <token>'"},
    {"--allow-insecure-listen", "KTUNE_ALLOW_INSECURE_LISTEN", OPT_BOOL,
     offsetof(kt_config, allow_insecure_listen), 0, 0, 1,
     "serve a non-loopback --listen address although no API token exists (anyone reaching it may "
     "tune and import) [off]"},
    {"--max-queued-jobs-per-token", "KTUNE_MAX_QUEUED_JOBS_PER_TOKEN", OPT_INT,
     offsetof(kt_config, max_queued_jobs_per_token), 0, 1, 1000000,
     "queued + running jobs one token (or all untokened callers together) may have; more get 429 "
     "[100]"},
    {"--runner-user", "KTUNE_RUNNER_USER", STR(runner_user),
     "when ktuned runs as root, the user ktune-runner switches to before it compiles or runs a "
     "kernel [nobody]"},
    {"--runner-uid-base", "KTUNE_RUNNER_UID_BASE", OPT_LLONG, offsetof(kt_config, runner_uid_base),
     0, 1, 4294967294.0,
     "when ktuned runs as root, the runner of a kernel submitted over HTTP runs as a uid of its "
     "version's own, base + hash(version) mod --runner-uids, no /etc/passwd entry needed "
     "[2000000000]"},
    {"--runner-uids", "KTUNE_RUNNER_UIDS", OPT_LLONG, offsetof(kt_config, runner_uids), 0, 0,
     4294967294.0,
     "how many uids from --runner-uid-base; 0: submitted kernels run as --runner-user like "
     "folder kernels [100000000]"},
    {"--log-level", "KTUNE_LOG_LEVEL", STR(log_level), "debug, info, warn or error [info]"},
    {"--workers", "KTUNE_WORKERS", OPT_INT, offsetof(kt_config, workers), 0, 1, 256,
     "measurement worker threads [2]"},
    {"--max-jobs", "KTUNE_MAX_JOBS", OPT_INT, offsetof(kt_config, max_jobs), 0, 1, 1024,
     "jobs this process drives at once, shared fairly between callers [8]"},
    {"--http-threads", "KTUNE_HTTP_THREADS", OPT_INT, offsetof(kt_config, http_threads), 0, 1, 256,
     "HTTP server threads [4]"},
    {"--max-connections", "KTUNE_MAX_CONNECTIONS", OPT_INT, offsetof(kt_config, max_connections), 0,
     16, 1000000,
     "HTTP connections open at once (kept within the open files limit); a new one beyond is "
     "closed unanswered, unless its address has fewer open than the busiest one, which then loses "
     "its oldest connection not being answered [4096]"},
    {"--max-connections-per-ip", "KTUNE_MAX_CONNECTIONS_PER_IP", OPT_INT,
     offsetof(kt_config, max_connections_per_ip), 0, 1, 1000000,
     "HTTP connections open at once from one client address [2048]"},
    {"--http-header-timeout-s", "KTUNE_HTTP_HEADER_TIMEOUT_S", OPT_DOUBLE,
     offsetof(kt_config, http_header_timeout_s), 0, 0.5, 3600,
     "seconds a connection has to send a request's headers (and idle keep-alive connections "
     "stay open); a quarter of it while more than half of --max-connections are open [10]"},
    {"--http-body-timeout-s", "KTUNE_HTTP_BODY_TIMEOUT_S", OPT_DOUBLE,
     offsetof(kt_config, http_body_timeout_s), 0, 0.5, 3600,
     "seconds a request's body has to arrive whole after its headers; later, 408 and the "
     "connection closed [30]"},
    {"--http-body-min-rate", "KTUNE_HTTP_BODY_MIN_RATE", OPT_DOUBLE,
     offsetof(kt_config, http_body_min_rate), 0, 0, 1e9,
     "bytes a second a request's body must average once it is 2 s old; slower, 408 and the "
     "connection closed; 0 = no minimum [1024]"},
    {"--max-queued-jobs", "KTUNE_MAX_QUEUED_JOBS", OPT_LLONG, offsetof(kt_config, max_queued_jobs),
     0, 1, 1e9, "jobs waiting to start, all clients together; more get 429 [1000]"},
    {"--max-queued-evaluations", "KTUNE_MAX_QUEUED_EVALUATIONS", OPT_LLONG,
     offsetof(kt_config, max_queued_evaluations), 0, 1, 1e15,
     "evaluations queued and running jobs may still make, all clients together; a job that "
     "would pass it gets 429 [10000000]"},
    {"--max-evaluations", "KTUNE_MAX_EVALUATIONS", OPT_LLONG, offsetof(kt_config, max_evaluations),
     0, 1, 1e12, "largest evaluation budget a job may ask for [1000000]"},
    {"--max-seconds", "KTUNE_MAX_SECONDS", OPT_DOUBLE, offsetof(kt_config, max_seconds), 0, 1e-3,
     1e9, "largest time budget in seconds a job may ask for [604800]"},
    {"--replay-speed", "KTUNE_REPLAY_SPEED", OPT_DOUBLE, offsetof(kt_config, replay_speed), 0, 0,
     10,
     "replay devices sleep this fraction of the recorded measuring time per trial; 0 = none [0]"},
    {"--kernels", "KTUNE_KERNELS", STR(kernels),
     "comma-separated folders of kernels (<dir>/<name>/spec.json) for the cpu and cuda devices; "
     "empty = none [<install>/kernels]"},
    {"--accel-devices", "KTUNE_ACCEL_DEVICES", STR(accel_devices),
     "the accel devices file (analytical accelerators served as accel:<name>); empty = none "
     "[<install>/accel/devices.json]"},
    {"--networks", "KTUNE_NETWORKS", STR(networks),
     "folder of preset networks for neural problems (issue 14: *.json, and data/ with the small "
     "Fashion-MNIST copy); empty = none [<install>/networks]"},
    {"--runner", "KTUNE_RUNNER", STR(runner),
     "the ktune-runner binary that measures on cpu and cuda devices [<dir of "
     "ktuned>/ktune-runner]"},
    {"--cache-dir", "KTUNE_CACHE_DIR", STR(cache_dir),
     "folder of the runners' compiled kernels [<data-dir>/cache]"},
    {"--cpu-core", "KTUNE_CPU_CORE", OPT_INT, offsetof(kt_config, cpu_core), 0, -1, 4095,
     "core that cpu measurements run on, kept free of ktuned's own threads; -1 = no pinning "
     "[the last core when there are 2 or more]"},
    {"--min-repeats", "KTUNE_MIN_REPEATS", OPT_INT, offsetof(kt_config, min_repeats), 0, 1, 100,
     "timed runs per measurement at least [5]"},
    {"--min-seconds", "KTUNE_MIN_SECONDS", OPT_DOUBLE, offsetof(kt_config, min_seconds), 0, 0, 3,
     "seconds of timed runs per measurement at least [0.2]"},
    {"--compile-timeout-s", "KTUNE_COMPILE_TIMEOUT_S", OPT_DOUBLE,
     offsetof(kt_config, compile_timeout_s), 0, 1, 3600,
     "seconds a kernel may take to compile [60]"},
    {"--run-timeout-s", "KTUNE_RUN_TIMEOUT_S", OPT_DOUBLE, offsetof(kt_config, run_timeout_s), 0,
     0.5, 3600,
     "seconds a measurement may run (after compiling) while its target has no ok result yet; "
     "later ones get 20x the best time per run [60]"},
    {"--slow-factor", "KTUNE_SLOW_FACTOR", OPT_DOUBLE, offsetof(kt_config, slow_factor), 0, 0, 1e6,
     "CPU: give up on a configuration (status timeout) once one call of it takes longer than this "
     "many times the best time seen for its target; 0 waits for every call [0]"},
    {"--neural-check-timeout-s", "KTUNE_NEURAL_CHECK_TIMEOUT_S", OPT_DOUBLE,
     offsetof(kt_config, neural_check_timeout_s), 0, 0.1, 3600,
     "seconds one legality check of a neural problem (the Fisher Potentials of a network and of "
     "its transformed candidate) may compute before its trial ends as timeout [60]"},
    {"--model-retrain-after", "KTUNE_MODEL_RETRAIN_AFTER", OPT_LLONG,
     offsetof(kt_config, model_retrain_after), 0, 0, 1e9,
     "retrain a kernel's predictor on a device class once this many ok trials of it arrived since "
     "its newest model's data; 0 = never [200]"},
    {"--model-train-delay-s", "KTUNE_MODEL_TRAIN_DELAY_S", OPT_DOUBLE,
     offsetof(kt_config, model_train_delay_s), 0, 0, 3600,
     "testing: hold every model training this many seconds at least before it is stored, so that "
     "a kill during training can be exercised [0]"},
    {"--best-cache-entries", "KTUNE_BEST_CACHE_ENTRIES", OPT_INT,
     offsetof(kt_config, best_cache_entries), 0, 0, 10000000,
     "GET /v1/best answers kept in memory (invalidated through LISTEN/NOTIFY); 0 = no cache "
     "[100000]"},
    {"--role", "KTUNE_ROLE", STR(role),
     "what this process does: api (HTTP API only: no measuring, no job driving, no training), "
     "worker (measures, drives jobs, trains; HTTP serves /healthz and /metrics only) or all [all]"},
    {"--lease-s", "KTUNE_LEASE_S", OPT_DOUBLE, offsetof(kt_config, lease_s), 0, 1, 3600,
     "seconds without a heartbeat after which a process's jobs, trials, models and devices are "
     "handed to others (its lease) [10]"},
    {"--job-max-start-attempts", "KTUNE_JOB_MAX_START_ATTEMPTS", OPT_INT,
     offsetof(kt_config, job_max_start_attempts), 0, 1, 1000000,
     "a job whose driving process died or stalled this many times since the job last completed a "
     "trial is failed (stop_reason attempts) instead of resumed again: a job that kills its "
     "worker is not retried for ever [3]"},
};
#define N_OPTIONS (sizeof options / sizeof options[0])

static int dir_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void set_defaults(kt_config *cfg, const char *exe_dir)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->listen, sizeof cfg->listen, "127.0.0.1:8080");
    snprintf(cfg->data_dir, sizeof cfg->data_dir, "./var");
    snprintf(cfg->log_level, sizeof cfg->log_level, "info");
    cfg->workers = 2;
    cfg->max_jobs = 8;
    cfg->http_threads = 4;
    cfg->best_cache_entries = 100000;
    cfg->max_connections = 4096;
    cfg->max_connections_per_ip = 2048;
    cfg->http_header_timeout_s = 10;
    cfg->http_body_timeout_s = 30;
    cfg->http_body_min_rate = 1024;
    cfg->max_queued_jobs = 1000;
    cfg->max_queued_evaluations = 10000000;
    cfg->max_evaluations = 1000000;
    cfg->max_seconds = 604800;
    char path[PATH_MAX];
    /* An installed or built binary finds the repository's web/ and datasets/ beside its own folder.
     */
    snprintf(path, sizeof path, "%s/../web", exe_dir ? exe_dir : ".");
    snprintf(cfg->web_dir, sizeof cfg->web_dir, "%s", dir_exists(path) ? path : "./web");
    snprintf(path, sizeof path, "%s/../datasets", exe_dir ? exe_dir : ".");
    snprintf(cfg->datasets, sizeof cfg->datasets, "%s", dir_exists(path) ? path : "./datasets");
    snprintf(path, sizeof path, "%s/../kernels", exe_dir ? exe_dir : ".");
    snprintf(cfg->kernels, sizeof cfg->kernels, "%s", dir_exists(path) ? path : "");
    snprintf(path, sizeof path, "%s/../accel/devices.json", exe_dir ? exe_dir : ".");
    snprintf(cfg->accel_devices, sizeof cfg->accel_devices, "%s", file_exists(path) ? path : "");
    snprintf(path, sizeof path, "%s/../networks", exe_dir ? exe_dir : ".");
    snprintf(cfg->networks, sizeof cfg->networks, "%s", dir_exists(path) ? path : "");
    snprintf(cfg->runner, sizeof cfg->runner, "%.*s/ktune-runner", PATH_MAX - 16,
             exe_dir ? exe_dir : ".");
    cfg->cpu_core = CONFIG_CPU_CORE_AUTO;
    cfg->min_repeats = 5;
    cfg->min_seconds = 0.2;
    cfg->compile_timeout_s = 60;
    cfg->run_timeout_s = 60;
    cfg->neural_check_timeout_s = 60;
    cfg->model_retrain_after = 200;
    snprintf(cfg->role, sizeof cfg->role, "all");
    cfg->lease_s = 10;
    cfg->job_max_start_attempts = 3;
    cfg->max_queued_jobs_per_token = 100;
    snprintf(cfg->runner_user, sizeof cfg->runner_user, "nobody");
    cfg->runner_uid_base = 2000000000LL; /* runner/privileges.h RUNNER_UID_BASE */
    cfg->runner_uids = 100000000LL;
}

static int set_value(kt_config *cfg, const config_option *o, const char *value, const char *source,
                     kt_error *err)
{
    char *base = (char *)cfg + o->offset;
    if (o->kind == OPT_BOOL) {
        int on = strcmp(value, "1") == 0 || strcmp(value, "true") == 0 || strcmp(value, "yes") == 0;
        int off =
            strcmp(value, "0") == 0 || strcmp(value, "false") == 0 || strcmp(value, "no") == 0;
        if (!on && !off)
            return kt_error_set(err, KT_ERR_CONFIG, "%s must be 1 or 0 (true or false), not '%s'",
                                source, value);
        *(int *)base = on;
        return 0;
    }
    if (o->kind == OPT_STRING) {
        if (strlen(value) >= o->size)
            return kt_error_set(err, KT_ERR_CONFIG, "%s is too long (at most %zu characters)",
                                source, o->size - 1);
        memcpy(base, value, strlen(value) + 1);
        return 0;
    }
    double v;
    if (kt_parse_double(value, -HUGE_VAL, HUGE_VAL, &v) < 0)
        return kt_error_set(err, KT_ERR_CONFIG, "%s must be a number, not '%s'", source, value);
    if (o->kind != OPT_DOUBLE && v != floor(v))
        return kt_error_set(err, KT_ERR_CONFIG, "%s must be an integer, not '%s'", source, value);
    if (v < o->min || v > o->max)
        return kt_error_set(err, KT_ERR_CONFIG, "%s must be between %g and %g, not %s", source,
                            o->min, o->max, value);
    if (o->kind == OPT_INT)
        *(int *)base = (int)v;
    else if (o->kind == OPT_LLONG)
        *(long long *)base = (long long)v;
    else
        *(double *)base = v;
    return 0;
}

int config_parse(kt_config *cfg, int argc, char **argv, const char *exe_dir, kt_error *err)
{
    set_defaults(cfg, exe_dir);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const char *v = getenv(options[i].env);
        if (v && *v && set_value(cfg, &options[i], v, options[i].env, err) < 0)
            return -1;
    }
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            cfg->help = 1;
            continue;
        }
        if (strcmp(arg, "--version") == 0) {
            cfg->version = 1;
            continue;
        }
        const config_option *o = NULL;
        const char *value = NULL;
        for (size_t i = 0; i < N_OPTIONS && !o; i++) {
            size_t n = strlen(options[i].flag);
            if (strncmp(arg, options[i].flag, n) == 0 && (arg[n] == '\0' || arg[n] == '=')) {
                o = &options[i];
                value = arg[n] == '=' ? arg + n + 1 : NULL;
            }
        }
        if (!o) {
            kt_error_set(err, KT_ERR_CONFIG, "unknown option '%s'", arg);
            kt_error_hint(err, "run ktuned --help for the list of options");
            return -1;
        }
        if (!value && o->kind == OPT_BOOL)
            value = "1";
        if (!value) {
            if (a + 1 >= argc)
                return kt_error_set(err, KT_ERR_CONFIG, "option %s needs a value", o->flag);
            value = argv[++a];
        }
        if (set_value(cfg, o, value, o->flag, err) < 0)
            return -1;
    }
    static const char *levels[] = {"debug", "info", "warn", "error"};
    int level_ok = 0;
    for (int i = 0; i < 4; i++)
        level_ok |= strcmp(cfg->log_level, levels[i]) == 0;
    if (!level_ok)
        return kt_error_set(err, KT_ERR_CONFIG,
                            "--log-level must be debug, info, warn or error, not '%s'",
                            cfg->log_level);
    if (strcmp(cfg->role, "api") != 0 && strcmp(cfg->role, "worker") != 0 &&
        strcmp(cfg->role, "all") != 0) {
        kt_error_set(err, KT_ERR_CONFIG, "--role must be api, worker or all, not '%s'", cfg->role);
        kt_error_hint(err, "api serves the HTTP API only; worker measures; all does both");
        return -1;
    }
    return 0;
}

void config_usage(FILE *out)
{
    fprintf(
        out,
        "usage: ktuned [options]\n\nktuned serves the ktune auto-tuning API.\n\noptions (each also "
        "read from its environment variable; the flag wins):\n");
    for (size_t i = 0; i < N_OPTIONS; i++)
        fprintf(out, "  %-20s %-24s %s\n", options[i].flag, options[i].env, options[i].help);
    fprintf(out, "  %-20s %-24s %s\n  %-20s %-24s %s\n", "--help", "", "print this help and exit",
            "--version", "", "print the version and exit");
}
