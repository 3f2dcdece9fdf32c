/* libFuzzer target: the importers. The input, as JSON, through cli_import_parse (Kernel Tuner
 * cache files and T4 results files converted to ktune trials, `ktune import`); and the same bytes
 * as a file through dataset_load (a Kernel Tuner cache as a replay dataset, catalog/dataset.c). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "catalog/dataset.h"
#include "cli/cli_formats.h"
#include "core/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    kt_log_init(KT_LOG_ERROR);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *file = json_loadb((const char *)data, size, 0, &je);
    if (file) {
        cli_import im;
        kt_error err;
        kt_error_clear(&err);
        /* Then as a genuine Kernel Tuner cache on the device external (issue 27). */
        if (cli_import_parse(file, &im, &err) == 0)
            (void)cli_import_external(file, NULL, NULL, &im, &err);
        cli_import_release(&im);
        json_decref(file);
    }
    int fd = memfd_create("fuzz_dataset", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) == (ssize_t)size) {
        char path[64], why[256];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        replay_dataset *ds = dataset_load(path, "fuzz", why, sizeof why);
        if (ds) {
            for (uint64_t i = 0; i < dataset_num_records(ds) && i < 64; i++)
                (void)dataset_record_at(ds, i);
            dataset_free(ds);
        }
    }
    close(fd);
    return 0;
}
