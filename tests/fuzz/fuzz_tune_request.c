/* libFuzzer target: a POST /v1/tune body through tune_request_parse (every field against the
 * limits) and, when it passes, catalog_resolve against the catalog of the repository's replay
 * datasets (kernel, device, problem, the space). Nothing may crash, leak or misbehave (ASan,
 * UBSan); refusals are fine. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/tune_request.h"
#include "catalog/catalog.h"
#include "core/log.h"

static catalog *cat;
static kt_config cfg;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    kt_log_init(KT_LOG_ERROR);
    static const char *const dirs[] = {KT_SOURCE_DIR "/datasets"};
    catalog_options opt = {.dataset_dirs = dirs, .n_dataset_dirs = 1};
    kt_error err;
    kt_error_clear(&err);
    cat = catalog_new(&opt, &err);
    if (!cat)
        abort(); /* the fuzz run would test nothing */
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
