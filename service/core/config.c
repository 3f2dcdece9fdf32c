#include "core/config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/early_stop.h"
#include "core/number.h"
#include "core/options.h"

/* The value of an option (or, named by o->name, of its environment twin) into its field of the
 * kt_config opts, one callback per kind: 0, or -1 with a message in msg naming the option. */
static int cfg_string(void *opts, const kt_option *o, const char *v, char *msg, size_t cap)
{
    size_t n = strlen(v);
    if (n > o->max_len) {
        snprintf(msg, cap, "%s is too long (at most %zu characters)", o->name, o->max_len);
        return -1;
    }
    memcpy((char *)opts + o->offset, v, n + 1);
    return 0;
}

/* An int 0/1: 1, true, yes or 0, false, no; the flag alone (v NULL) means 1. */
static int cfg_bool(void *opts, const kt_option *o, const char *v, char *msg, size_t cap)
{
    static const char *const words[] = {"0", "false", "no", "1", "true", "yes"};
    for (int i = 0; i < 6; i++) {
        if (!v || strcmp(v, words[i]) == 0) {
            *(int *)((char *)opts + o->offset) = !v || i >= 3;
            return 0;
        }
    }
    snprintf(msg, cap, "%s must be 1 or 0 (true or false), not '%s'", o->name, v);
    return -1;
}

/* A number in [o->lo, o->hi], whole unless real. */
static int cfg_number(const kt_option *o, const char *v, int real, double *out, char *msg,
                      size_t cap)
{
    if (kt_parse_double(v, -HUGE_VAL, HUGE_VAL, out) < 0)
        snprintf(msg, cap, "%s must be a number, not '%s'", o->name, v);
    else if (!real && *out != floor(*out))
        snprintf(msg, cap, "%s must be an integer, not '%s'", o->name, v);
    else if (*out < o->lo || *out > o->hi)
        snprintf(msg, cap, "%s must be between %g and %g, not %s", o->name, o->lo, o->hi, v);
    else
        return 0;
    return -1;
}

static int cfg_int(void *opts, const kt_option *o, const char *v, char *msg, size_t cap)
{
    double d;
    if (cfg_number(o, v, 0, &d, msg, cap) < 0)
        return -1;
    *(int *)((char *)opts + o->offset) = (int)d;
    return 0;
}

static int cfg_llong(void *opts, const kt_option *o, const char *v, char *msg, size_t cap)
{
    double d;
    if (cfg_number(o, v, 0, &d, msg, cap) < 0)
        return -1;
    *(long long *)((char *)opts + o->offset) = (long long)d;
    return 0;
}

static int cfg_double(void *opts, const kt_option *o, const char *v, char *msg, size_t cap)
{
    return cfg_number(o, v, 1, (double *)((char *)opts + o->offset), msg, cap);
}

/* A row of the table: an option of kt_config's field, set by the callback of its kind. */
#define CFG_OPTION(flag, field, callback, low, high, len, opt_flags, text)                         \
    {                                                                                              \
        .name = flag, .kind = KT_OPT_CALLBACK, .offset = offsetof(kt_config, field), .lo = low,    \
        .hi = high, .max_len = len, .flags = opt_flags, .cb = callback, .help = text               \
    }
#define CFG_STRING(flag, field, text)                                                              \
    CFG_OPTION(flag, field, cfg_string, 0, 0, sizeof(((kt_config *)0)->field) - 1, 0, text)
#define CFG_BOOL(flag, field, text)                                                                \
    CFG_OPTION(flag, field, cfg_bool, 0, 1, 0, KT_OPT_OPTIONAL, text)
#define CFG_INT(flag, field, low, high, text)                                                      \
    CFG_OPTION(flag, field, cfg_int, low, high, 0, 0, text)
#define CFG_LLONG(flag, field, low, high, text)                                                    \
    CFG_OPTION(flag, field, cfg_llong, low, high, 0, 0, text)
#define CFG_DOUBLE(flag, field, low, high, text)                                                   \
    CFG_OPTION(flag, field, cfg_double, low, high, 0, 0, text)

/* Every setting: a flag and its environment twin (env_name), in the order of the help. */
static const kt_option options[] = {
    CFG_STRING("--listen", listen, "address and port to serve HTTP on [127.0.0.1:8080]"),
    CFG_STRING("--data-dir", data_dir, "folder for the embedded database and state [./var]"),
    CFG_STRING("--database-url", database_url,
               "PostgreSQL connection URL; when set, no embedded database is started"),
    CFG_STRING("--datasets", datasets,
               "comma-separated folders of replay datasets (Kernel Tuner cache files) "
               "[<install>/datasets]"),
    CFG_STRING("--web-dir", web_dir, "folder of the dashboard's static files [<install>/web]"),
    CFG_STRING(
        "--api-token", api_token,
        "an admin API token (scopes read, tune, admin) given at start-up; when any token exists "
        "every request but /healthz and static files needs 'Authorization: Bearer <token>'"),
    CFG_BOOL("--allow-insecure-listen", allow_insecure_listen,
             "serve a non-loopback --listen address although no API token exists (anyone reaching "
             "it may tune and import) [off]"),
    CFG_INT("--max-queued-jobs-per-token", max_queued_jobs_per_token, 1, 1000000,
            "queued + running jobs one token (or all untokened callers together) may have; more "
            "get 429 [100]"),
    CFG_STRING("--runner-user", runner_user,
               "when ktuned runs as root, the user ktune-runner switches to before it compiles or "
               "runs a kernel [nobody]"),
    CFG_LLONG("--runner-uid-base", runner_uid_base, 1, 4294967294.0,
              "when ktuned runs as root, the runner of a kernel submitted over HTTP runs as a uid "
              "of its version's own, base + hash(version) mod --runner-uids, no /etc/passwd entry "
              "needed [2000000000]"),
    CFG_LLONG("--runner-uids", runner_uids, 0, 4294967294.0,
              "how many uids from --runner-uid-base; 0: submitted kernels run as --runner-user "
              "like folder kernels [100000000]"),
    CFG_STRING("--log-level", log_level, "debug, info, warn or error [info]"),
    CFG_INT("--workers", workers, 1, 256, "measurement worker threads [2]"),
    CFG_INT("--max-jobs", max_jobs, 1, 1024,
            "jobs this process drives at once, shared fairly between callers [8]"),
    CFG_INT("--http-threads", http_threads, 1, 256,
            "HTTP server threads for light requests (each an event loop) [the cores it may "
            "run on, 1 to 4]"),
    CFG_INT("--http-heavy-threads", http_heavy_threads, 1, 64,
            "HTTP threads for heavy requests (trial pages, imports, exports, /v1/best/entries), "
            "never run on the light threads; with all busy, 4 per thread wait and more get 429 "
            "[2]"),
    CFG_INT("--max-connections", max_connections, 16, 1000000,
            "HTTP connections open at once (kept within the open files limit); a new one beyond is "
            "closed unanswered, unless its address has fewer open than the busiest one, which then "
            "loses its oldest connection not being answered [4096]"),
    CFG_INT("--max-connections-per-ip", max_connections_per_ip, 1, 1000000,
            "HTTP connections open at once from one client address [2048]"),
    CFG_DOUBLE(
        "--http-header-timeout-s", http_header_timeout_s, 0.5, 3600,
        "seconds a connection has to send a request's headers (and idle keep-alive connections "
        "stay open); a quarter of it while more than half of --max-connections are open [10]"),
    CFG_DOUBLE("--http-body-timeout-s", http_body_timeout_s, 0.5, 3600,
               "seconds a request's body has to arrive whole after its headers; later, 408 and the "
               "connection closed [30]"),
    CFG_DOUBLE("--http-body-min-rate", http_body_min_rate, 0, 1e9,
               "bytes a second a request's body must average once it is 2 s old; slower, 408 and "
               "the connection closed; 0 = no minimum [1024]"),
    CFG_LLONG("--max-queued-jobs", max_queued_jobs, 1, 1e9,
              "jobs waiting to start, all clients together; more get 429 [1000]"),
    CFG_LLONG("--max-queued-evaluations", max_queued_evaluations, 1, 1e15,
              "evaluations queued and running jobs may still make, all clients together; a job "
              "that would pass it gets 429 [10000000]"),
    CFG_LLONG("--max-evaluations", max_evaluations, 1, 1e12,
              "largest evaluation budget a job may ask for [1000000]"),
    CFG_DOUBLE("--max-seconds", max_seconds, 1e-3, 1e9,
               "largest time budget in seconds a job may ask for [604800]"),
    CFG_DOUBLE("--replay-speed", replay_speed, 0, 10,
               "replay devices sleep this fraction of the recorded measuring time per trial; 0 = "
               "none [0]"),
    CFG_STRING("--kernels", kernels,
               "comma-separated folders of kernels (<dir>/<name>/spec.json) for the cpu and cuda "
               "devices; empty = none [<install>/kernels]"),
    CFG_STRING("--accel-devices", accel_devices,
               "the accel devices file (analytical accelerators served as accel:<name>); empty = "
               "none [<install>/accel/devices.json]"),
    CFG_STRING("--networks", networks,
               "folder of preset networks for neural problems (issue 14: *.json, and data/ with "
               "the small Fashion-MNIST copy); empty = none [<install>/networks]"),
    CFG_STRING("--runner", runner,
               "the ktune-runner binary that measures on cpu and cuda devices [<dir of "
               "ktuned>/ktune-runner]"),
    CFG_STRING("--cache-dir", cache_dir,
               "folder of the runners' compiled kernels [<data-dir>/cache]"),
    CFG_INT("--cache-max-mb", cache_max_mb, 0, 16777216,
            "MiB the compiled kernels in --cache-dir may take, shared by every runner using it; "
            "the least recently used go first; 0 = unbounded [2048]"),
    CFG_INT("--cpu-core", cpu_core, -1, 4095,
            "core that cpu measurements run on, kept free of ktuned's own threads; -1 = no pinning "
            "[the last core when there are 2 or more]"),
    CFG_INT("--min-repeats", min_repeats, 1, 100, "timed runs per measurement at least [5]"),
    CFG_DOUBLE("--min-seconds", min_seconds, 0, 3,
               "seconds of timed runs per measurement at least [0.2]"),
    CFG_INT("--early-stop-after", early_stop_after, 0, 100,
            "a configuration clearly slower than its job's best stops timing after this many "
            "runs (fewer than --min-repeats and --min-seconds ask); 0 = always the full count [3]"),
    CFG_DOUBLE("--compile-timeout-s", compile_timeout_s, 1, 3600,
               "seconds a kernel may take to compile [60]"),
    CFG_DOUBLE("--run-timeout-s", run_timeout_s, 0.5, 3600,
               "seconds a measurement may run (after compiling) while its target has no ok result "
               "yet; later ones get 20x the best time per run [60]"),
    CFG_DOUBLE(
        "--slow-factor", slow_factor, 0, 1e6,
        "CPU: give up on a configuration (status timeout) once one call of it takes longer than "
        "this many times the best time seen for its target; 0 waits for every call [0]"),
    CFG_DOUBLE(
        "--neural-check-timeout-s", neural_check_timeout_s, 0.1, 3600,
        "seconds one legality check of a neural problem (the Fisher Potentials of a network and of "
        "its transformed candidate) may compute before its trial ends as timeout [60]"),
    CFG_LLONG("--model-retrain-after", model_retrain_after, 0, 1e9,
              "retrain a kernel's predictor on a device class once this many ok trials of it "
              "arrived since its newest model's data; 0 = never [200]"),
    CFG_INT("--model-min-problems", model_min_problems, 0, 1000000,
            "a predictor trained on fewer problems is weak: ready, but GET /v1/best serves its "
            "predictions only with ?accept=weak [8]"),
    CFG_DOUBLE("--model-min-accuracy", model_min_accuracy, 0, 1,
               "a predictor whose held-out accuracy (the share of held-out problems whose "
               "predicted configuration is within 1.10x of their best) is below this, or unknown, "
               "is weak (as --model-min-problems); 0 = no minimum [0.5]"),
    CFG_DOUBLE("--model-train-delay-s", model_train_delay_s, 0, 3600,
               "testing: hold every model training this many seconds at least before it is stored, "
               "so that a kill during training can be exercised [0]"),
    CFG_INT("--best-cache-entries", best_cache_entries, 0, 10000000,
            "GET /v1/best answers kept in memory (invalidated through LISTEN/NOTIFY); 0 = no cache "
            "[100000]"),
    CFG_STRING("--role", role,
               "what this process does: api (HTTP API only: no measuring, no job driving, no "
               "training), worker (measures, drives jobs, trains; HTTP serves /healthz and "
               "/metrics only) or all [all]"),
    CFG_DOUBLE("--lease-s", lease_s, 1, 3600,
               "seconds without a heartbeat after which a process's jobs, trials, models and "
               "devices are handed to others (its lease) [10]"),
    CFG_INT("--job-max-start-attempts", job_max_start_attempts, 1, 1000000,
            "a job whose driving process died or stalled this many times since the job last "
            "completed a trial is failed (stop_reason attempts) instead of resumed again: a job "
            "that kills its worker is not retried for ever [3]"),
    {.name = "--version", .kind = KT_OPT_FLAG, .offset = offsetof(kt_config, version)},
    {.kind = KT_OPT_END},
};

/* --help does not end the parse: a bad option after it still fails start-up. */
static const kt_opt_table config_table = {.options = options,
                                          .unknown = "unknown option '%s'",
                                          .missing = "option %s needs a value",
                                          .help_reads_on = 1};

/* A flag's environment twin: "--max-jobs" -> KTUNE_MAX_JOBS. */
static void env_name(const char *flag, char *out, size_t cap)
{
    snprintf(out, cap, "KTUNE_%s", flag + 2);
    for (char *p = out; *p; p++)
        *p = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
}

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

int config_default_http_threads(void)
{
    /* the cores this process may run on (taskset, a cpuset, a container's limit: more light
     * threads than those only time-slice, which is what lengthened /v1/best's tail, issue 32),
     * else the online ones */
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                         : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > CONFIG_HTTP_THREADS_CAP ? CONFIG_HTTP_THREADS_CAP : (int)n;
}

static void set_defaults(kt_config *cfg, const char *exe_dir)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->listen, sizeof cfg->listen, "127.0.0.1:8080");
    snprintf(cfg->data_dir, sizeof cfg->data_dir, "./var");
    snprintf(cfg->log_level, sizeof cfg->log_level, "info");
    cfg->workers = 2;
    cfg->max_jobs = 8;
    cfg->http_threads = config_default_http_threads();
    cfg->http_heavy_threads = 2;
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
    cfg->cache_max_mb = 2048;
    cfg->min_repeats = 5;
    cfg->min_seconds = 0.2;
    cfg->early_stop_after = KT_EARLY_STOP_AFTER;
    cfg->compile_timeout_s = 60;
    cfg->run_timeout_s = 60;
    cfg->neural_check_timeout_s = 60;
    cfg->model_retrain_after = 200;
    cfg->model_min_problems = 8;   /* training/model_confidence.h MODEL_MIN_PROBLEMS_DEFAULT */
    cfg->model_min_accuracy = 0.5; /* MODEL_MIN_ACCURACY_DEFAULT */
    snprintf(cfg->role, sizeof cfg->role, "all");
    cfg->lease_s = 10;
    cfg->job_max_start_attempts = 3;
    cfg->max_queued_jobs_per_token = 100;
    snprintf(cfg->runner_user, sizeof cfg->runner_user, "nobody");
    cfg->runner_uid_base = 2000000000LL; /* runner/privileges.h RUNNER_UID_BASE */
    cfg->runner_uids = 100000000LL;
}

/* The environment twins that are set (not empty), each named in its message by the variable. */
static int config_from_env(kt_config *cfg, char *msg, size_t cap)
{
    for (const kt_option *o = options; o->kind != KT_OPT_END; o++) {
        char env[64];
        if (o->kind != KT_OPT_CALLBACK)
            continue;
        env_name(o->name, env, sizeof env);
        const char *v = getenv(env);
        kt_option twin = *o;
        twin.name = env;
        if (v && *v && o->cb(cfg, &twin, v, msg, cap) < 0)
            return -1;
    }
    return 0;
}

int config_parse(kt_config *cfg, int argc, char **argv, const char *exe_dir, kt_error *err)
{
    char msg[KT_ERROR_MESSAGE_MAX];
    set_defaults(cfg, exe_dir);
    if (config_from_env(cfg, msg, sizeof msg) < 0)
        return kt_error_set(err, KT_ERR_CONFIG, "%s", msg);
    int rc = kt_opt_parse(&config_table, argc, argv, cfg, msg, sizeof msg);
    if (rc < 0) {
        kt_error_set(err, KT_ERR_CONFIG, "%s", msg);
        if (rc == KT_OPT_UNKNOWN)
            kt_error_hint(err, "run ktuned --help for the list of options");
        return -1;
    }
    cfg->help = rc == 1;
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
    for (const kt_option *o = options; o->kind != KT_OPT_END; o++) {
        char env[64];
        if (o->kind != KT_OPT_CALLBACK)
            continue;
        env_name(o->name, env, sizeof env);
        fprintf(out, "  %-20s %-24s %s\n", o->name, env, o->help);
    }
    fprintf(out, "  %-20s %-24s %s\n  %-20s %-24s %s\n", "--help", "", "print this help and exit",
            "--version", "", "print the version and exit");
}
