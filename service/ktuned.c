/* ktuned — the ktune service: parses the configuration, starts the service, waits for SIGINT or
 * SIGTERM, stops it cleanly. */
#include <libgen.h>
#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "service.h"

static void exe_dir(char *out, size_t cap)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) {
        snprintf(out, cap, ".");
        return;
    }
    path[n] = '\0';
    snprintf(out, cap, "%s", dirname(path));
}

int main(int argc, char **argv)
{
    char dir[PATH_MAX];
    exe_dir(dir, sizeof dir);
    kt_config cfg;
    kt_error err;
    kt_error_clear(&err);
    if (config_parse(&cfg, argc, argv, dir, &err) < 0) {
        fprintf(stderr, "ktuned: %s\n", err.message);
        if (err.hint[0])
            fprintf(stderr, "hint: %s\n", err.hint);
        return 2;
    }
    if (cfg.help) {
        config_usage(stdout);
        return 0;
    }
    if (cfg.version) {
        printf("ktuned %s\n", KTUNE_VERSION);
        return 0;
    }
    kt_log_level level = KT_LOG_INFO;
    kt_log_parse_level(cfg.log_level, &level);
    kt_log_init(level);

    /* Signals are taken synchronously by this thread; every other thread inherits the mask. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    service svc;
    if (service_start(&svc, &cfg, &err) < 0) {
        log_error("ktuned failed to start: %s", err.message);
        if (err.hint[0])
            log_error("hint: %s", err.hint);
        return 1;
    }
    /* The address to print: the listen host (loopback for "all") with the port actually bound. */
    char name[256];
    snprintf(name, sizeof name, "%s", cfg.listen);
    char *colon = strrchr(name, ':');
    if (colon)
        *colon = '\0';
    if (!name[0] || strcmp(name, "0.0.0.0") == 0 || strcmp(name, "[::]") == 0)
        snprintf(name, sizeof name, "127.0.0.1");
    char host[300];
    snprintf(host, sizeof host, "%s:%d", name, http_server_port(svc.http));
    if (strcmp(cfg.role, "worker") == 0)
        log_info("ktuned %s ready (role worker): probes at http://%s/healthz and /metrics",
                 KTUNE_VERSION, host);
    else
        log_info("ktuned %s ready (role %s): dashboard at http://%s/ , API at http://%s/v1/",
                 KTUNE_VERSION, cfg.role, host, host);
    /* Parsed by scripts and tests (tests/integration/ktuned_fixture.py): keep the form. */
    printf("ktuned ready: dashboard http://%s/\n", host);
    fflush(stdout);

    int sig = 0;
    sigwait(&stop_signals, &sig);
    log_info("received %s, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
    service_stop(&svc);
    log_info("stopped");
    return 0;
}
