/* libFuzzer target: a POST /v1/tune body through tune_request_parse (every field against the
 * limits) and, when it passes, catalog_resolve against a catalog of the repository's replay
 * datasets, its kernels on a handed cpu record (no runner is started) and its preset networks
 * (kernel, device, problem, the space; a "neural" member with a preset or an inline network, whose
 * bounds are checked there: issue 26). Nothing may crash, leak or misbehave (ASan, UBSan);
 * refusals are fine. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/tune_request.h"
#include "catalog/catalog.h"
#include "core/log.h"

static catalog *cat;
static kt_config cfg;
static char cache[64]; /* the runners' compile cache a real catalog names; never written here */

static void remove_cache(void)
{
    rmdir(cache);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    kt_log_init(KT_LOG_ERROR);
    static const char *const dirs[] = {KT_SOURCE_DIR "/datasets"};
    static const char *const kdirs[] = {KT_SOURCE_DIR "/kernels"};
    catalog_options opt = {
        .dataset_dirs = dirs, .n_dataset_dirs = 1, .networks_dir = KT_SOURCE_DIR "/networks"};
    snprintf(cache, sizeof cache, "/tmp/kt-fuzz-cache-XXXXXX");
    if (!mkdtemp(cache))
        abort();
    atexit(remove_cache);
    catalog_real_options real = {.kernel_dirs = kdirs,
                                 .n_kernel_dirs = 1,
                                 .runner = "/nonexistent/ktune-runner",
                                 .cache_dir = cache,
                                 .cpu_core = -1};
    catalog_device *d = calloc(1, sizeof *d);
    if (!d)
        abort();
    snprintf(d->name, sizeof d->name, "cpu");
    d->kind = KSPEC_CPU;
    d->available = 1;
    d->klass = strdup("cpu:Fuzz_CPU:256");
    d->toolchain = strdup("gcc 12.2.0");
    d->description_text = strdup("{}");
    d->limits = (kspec_limits){{2, 32768, 1048576, 8388608, 256}};
    kt_error err;
    kt_error_clear(&err);
    cat = catalog_new_real(&opt, &real, d, 1, &err);
    if (!cat)
        abort(); /* the fuzz run would test nothing */
    /* The neural path must be reachable: conv2d_neural on the cpu with a preset network. */
    json_t *problem = json_loads("{\"N\": 1, \"neural\": {\"allow\": [\"group\"], \"network\": "
                                 "\"vgg_fm\", \"layer\": \"conv4\"}}",
                                 0, NULL);
    target tg;
    if (!problem || catalog_resolve(cat, "conv2d_neural", "cpu", problem, &tg, &err) < 0)
        abort();
    target_release(&tg);
    json_decref(problem);
    memset(&cfg, 0, sizeof cfg);
    cfg.max_evaluations = 1000000;
    cfg.max_seconds = 604800;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
    if (!body)
        return 0;
    tune_request t;
    kt_error err;
    kt_error_clear(&err);
    if (json_is_object(body) && tune_request_parse(&cfg, body, &t, &err) == 0) {
        target tg;
        if (catalog_resolve(cat, t.kernel, t.device, t.problem, &tg, &err) == 0)
            target_release(&tg);
    }
    json_decref(body);
    return 0;
}
