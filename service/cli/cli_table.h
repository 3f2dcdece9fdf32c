/* cli/cli_table — `ktune best --all --format table`: the deploy table, every entry of the best
 * table (GET /v1/best/entries, page by page) as one tab-separated line each, the format that the
 * Python client's ktune.Table and clients/c/ktune_table.h load (clients/README.md):
 *
 *     # ktune-table 1
 *     kernel TAB device_class TAB kernel_hash TAB toolchain TAB origin TAB time_ms TAB problem TAB
 *     config TAB measured_at            (the column line; then one entry a line, newest first)
 *
 * problem and config are compact JSON objects with sorted members, ASCII only; time_ms "%.17g".
 *
 * Call order: cli_table_write once (it owns nothing the caller gives it); cli_table_row is the pure
 * part (one line of one entry), for the unit tests. */
#ifndef KT_CLI_TABLE_H
#define KT_CLI_TABLE_H

#include <jansson.h>
#include <stdio.h>

#include "cli/cli_client.h"
#include "core/error.h"
#include "core/strbuf.h"

#define CLI_TABLE_FORMAT_LINE "# ktune-table 1"
#define CLI_TABLE_COLUMNS                                                                          \
    "kernel\tdevice_class\tkernel_hash\ttoolchain\torigin\ttime_ms\tproblem\tconfig\tmeasured_at"

/* Appends entry's line (with its '\n') to out; -1 with err when the entry lacks a field or a text
 * field holds a tab or line break (it would break the format). */
int cli_table_row(const json_t *entry, strbuf *out, kt_error *err);
/* Pages GET /v1/best/entries (kernel and device_class: filters, NULL for all) and writes the table
 * to f; an entry seen on an earlier page (it improved while paging) is written once. Returns an
 * exit code (cli.h); *rows the entries written. */
int cli_table_write(cli_client *cl, const char *kernel, const char *device_class, FILE *f,
                    long long *rows);

#endif
