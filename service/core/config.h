/* core/config — ktuned's configuration: every setting is a flag with an environment twin (flag
 * wins), parsed once at start-up into a plain struct the service keeps. config_parse validates
 * every value; config_usage prints the table of settings (ktuned --help). Nothing to free. */
#ifndef KT_CORE_CONFIG_H
#define KT_CORE_CONFIG_H

#include <limits.h>
#include <stdio.h>

#include "error.h"

typedef struct kt_config {
    char listen[256];          /* --listen, KTUNE_LISTEN */
    char data_dir[PATH_MAX];   /* --data-dir, KTUNE_DATA_DIR */
    char database_url[2048];   /* --database-url, KTUNE_DATABASE_URL; empty = embedded cluster */
    char datasets[4096];       /* --datasets, KTUNE_DATASETS: comma-separated folders */
    char web_dir[PATH_MAX];    /* --web-dir, KTUNE_WEB_DIR */
    char api_token[256];       /* --api-token, KTUNE_API_TOKEN: required for POST/DELETE when set */
    char log_level[16];        /* --log-level, KTUNE_LOG_LEVEL */
    int workers;               /* --workers, KTUNE_WORKERS: measurement threads */
    int max_jobs;              /* --max-jobs, KTUNE_MAX_JOBS: jobs driven at once by this process */
    int http_threads;          /* --http-threads, KTUNE_HTTP_THREADS */
    long long max_evaluations; /* --max-evaluations, KTUNE_MAX_EVALUATIONS: budget cap per job */
    double max_seconds;        /* --max-seconds, KTUNE_MAX_SECONDS: budget cap per job */
    double
        replay_speed; /* --replay-speed, KTUNE_REPLAY_SPEED: replay sleeps speed x recorded time */
    int help;         /* --help given */
    int version;      /* --version given */
} kt_config;

/* Fills defaults, then the environment, then argv. Errors: KT_ERR_CONFIG naming the flag or
 * variable and what it accepts. exe_dir: folder of the running binary, used to find the default web
 * and dataset folders (<exe_dir>/../web, <exe_dir>/../datasets) when they exist. */
int config_parse(kt_config *cfg, int argc, char **argv, const char *exe_dir, kt_error *err);
void config_usage(FILE *out);

#endif
