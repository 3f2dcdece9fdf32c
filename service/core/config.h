/* core/config — ktuned's configuration: every setting is a flag with an environment twin,
 * KTUNE_<FLAG> ("--max-jobs": KTUNE_MAX_JOBS; the flag wins), parsed once at start-up into a plain
 * struct the service keeps. The settings are a core/options table (the one parser of the CLI and
 * bench too); config_parse validates every value; config_usage prints the table of settings
 * (ktuned --help). Nothing to free. */
#ifndef KT_CORE_CONFIG_H
#define KT_CORE_CONFIG_H

#include <limits.h>
#include <stdio.h>

#include "core/error.h"

typedef struct kt_config {
    char listen[256];          /* --listen, KTUNE_LISTEN */
    char data_dir[PATH_MAX];   /* --data-dir, KTUNE_DATA_DIR */
    char database_url[2048];   /* --database-url, KTUNE_DATABASE_URL; empty = embedded cluster */
    char datasets[4096];       /* --datasets, KTUNE_DATASETS: comma-separated folders */
    char web_dir[PATH_MAX];    /* --web-dir, KTUNE_WEB_DIR */
    char api_token[256];       /* --api-token, KTUNE_API_TOKEN: an admin token given at start-up */
    int allow_insecure_listen; /* --allow-insecure-listen: non-loopback --listen with no token */
    int max_queued_jobs_per_token; /* --max-queued-jobs-per-token: queued+running jobs, 429 beyond
                                    */
    char runner_user[64];          /* --runner-user: ktune-runner's user when ktuned is root */
    long long runner_uid_base;     /* --runner-uid-base: first uid of submitted versions' runners */
    long long runner_uids;         /* --runner-uids: how many (0: they share --runner-user) */
    char log_level[16];            /* --log-level, KTUNE_LOG_LEVEL */
    char kernels[4096];           /* --kernels, KTUNE_KERNELS: comma-separated folders; "" = none */
    char accel_devices[PATH_MAX]; /* --accel-devices, KTUNE_ACCEL_DEVICES: the accel devices file;
                                   * "" = none */
    char networks[PATH_MAX];      /* --networks, KTUNE_NETWORKS: preset networks; "" = none */
    char runner[PATH_MAX];        /* --runner, KTUNE_RUNNER: the ktune-runner binary */
    char cache_dir[PATH_MAX];     /* --cache-dir, KTUNE_CACHE_DIR; "" = <data_dir>/cache */
    int cache_max_mb;             /* --cache-max-mb: the compiled kernels' bound; 0 = unbounded */
    int workers;                  /* --workers, KTUNE_WORKERS: measurement threads */
    int max_jobs;              /* --max-jobs, KTUNE_MAX_JOBS: jobs driven at once by this process */
    int http_threads;          /* --http-threads, KTUNE_HTTP_THREADS: light (event loops) */
    int http_heavy_threads;    /* --http-heavy-threads, KTUNE_HTTP_HEAVY_THREADS */
    int best_cache_entries;    /* --best-cache-entries, KTUNE_BEST_CACHE_ENTRIES: 0 = no cache */
    int cpu_core;              /* --cpu-core, KTUNE_CPU_CORE: -1 none, or CONFIG_CPU_CORE_AUTO */
    int min_repeats;           /* --min-repeats, KTUNE_MIN_REPEATS: timed runs per measurement */
    long long max_evaluations; /* --max-evaluations, KTUNE_MAX_EVALUATIONS: budget cap per job */
    double max_seconds;        /* --max-seconds, KTUNE_MAX_SECONDS: budget cap per job */
    double min_seconds;        /* --min-seconds, KTUNE_MIN_SECONDS: timing per measurement */
    double compile_timeout_s;  /* --compile-timeout-s, KTUNE_COMPILE_TIMEOUT_S */
    double run_timeout_s;      /* --run-timeout-s, KTUNE_RUN_TIMEOUT_S: before any ok result */
    double slow_factor;        /* --slow-factor, KTUNE_SLOW_FACTOR: 0 off */
    int early_stop_after;      /* --early-stop-after, KTUNE_EARLY_STOP_AFTER: 0 off (issue 32) */
    double neural_check_timeout_s; /* --neural-check-timeout-s, KTUNE_NEURAL_CHECK_TIMEOUT_S: one
                                    * legality check of a neural problem (issue 26) */
    long long model_retrain_after; /* --model-retrain-after, KTUNE_MODEL_RETRAIN_AFTER: 0 off */
    double model_train_delay_s;    /* --model-train-delay-s, KTUNE_MODEL_TRAIN_DELAY_S: testing */
    int model_min_problems;        /* --model-min-problems: fewer trained problems, a weak model */
    double model_min_accuracy;     /* --model-min-accuracy: lower held-out accuracy, weak (31) */
    double
        replay_speed; /* --replay-speed, KTUNE_REPLAY_SPEED: replay sleeps speed x recorded time */
    char role[16];    /* --role, KTUNE_ROLE: "api", "worker" or "all" (checked) */
    double lease_s;   /* --lease-s, KTUNE_LEASE_S: heartbeat age after which work is handed back */
    int job_max_start_attempts; /* --job-max-start-attempts, KTUNE_JOB_MAX_START_ATTEMPTS: a job
                                 * whose process died this often since its last completed trial
                                 * is failed, not resumed (issue 26) */

    /* Admission (issue #11): HTTP connections (--max-connections, --max-connections-per-ip),
     * the header deadline (--http-header-timeout-s), the body deadline and minimum rate
     * (--http-body-timeout-s, --http-body-min-rate in bytes/s, 0 = none; issue 26), jobs and
     * evaluations queued by all clients (--max-queued-jobs, --max-queued-evaluations); each with
     * its KTUNE_<NAME> twin. */
    int max_connections;
    int max_connections_per_ip;
    double http_header_timeout_s;
    double http_body_timeout_s;
    double http_body_min_rate;
    long long max_queued_jobs;
    long long max_queued_evaluations;

    int help;    /* --help given */
    int version; /* --version given */
} kt_config;

/* cpu_core's default: the last core this process may use, when it may use 2 or more. */
#define CONFIG_CPU_CORE_AUTO (-2)

/* --http-threads's default: the cores this process may run on (sched_getaffinity: taskset, a
 * cpuset; else the online CPUs), at least 1, at most this many. Each light
 * thread is one event loop serving from the /v1/best cache; more threads than cores only contend
 * (GET /v1/best's p99 on one server core: 0.50-0.59 of nginx's with 1 thread, 1.15-1.24 with 4;
 * tests/bench/results/README.md), and past 4 each adds a database connection for little. */
#define CONFIG_HTTP_THREADS_CAP 4
int config_default_http_threads(void);

/* Fills defaults, then the environment, then argv. Errors: KT_ERR_CONFIG naming the flag or
 * variable and what it accepts. exe_dir: folder of the running binary, used to find the default
 * web, dataset and kernel folders (<exe_dir>/../web, <exe_dir>/../datasets, <exe_dir>/../kernels)
 * and the accel devices file (<exe_dir>/../accel/devices.json) when they exist, and the runner
 * (<exe_dir>/ktune-runner). */
int config_parse(kt_config *cfg, int argc, char **argv, const char *exe_dir, kt_error *err);
void config_usage(FILE *out);

#endif
