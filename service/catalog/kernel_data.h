/* catalog/kernel_data — the data files of a kernel submitted over HTTP (issue 27): the caller's
 * own input arrays and expected outputs (POST /v1/kernels "data", Kernel Tuner's arguments and
 * answer), each a name, a dtype and raw little-endian bytes, sent and stored as base64. A buffer's
 * init {"kind": "data", "file": NAME} and an answer {"file": NAME} name them (kernel_spec_data.c);
 * their SHA-256 goes into the kernel's version, and the measure backend sends them to runners by
 * that hash (runner/PROTOCOL.md, "data").
 *
 * Lifecycle: kernel_data_from_json (the request's or the stored "data") -> kernel_data_find /
 * kernel_data_* accessors / kernel_data_json (any thread, read only) -> kernel_data_free. The set
 * owns every name and byte. */
#ifndef KT_CATALOG_KERNEL_DATA_H
#define KT_CATALOG_KERNEL_DATA_H

#include <jansson.h>
#include <stddef.h>

#include "core/dtype.h"
#include "core/error.h"

#define KDATA_MAX_FILES 32
/* Decoded bytes of all of a kernel's data files together: base64 takes 4/3 of it, and the whole
 * request body of POST /v1/kernels is at most 1 MiB (http/server.h). */
#define KDATA_MAX_BYTES (512 * 1024)
#define KDATA_SHA_LEN   64 /* hex digits of a data file's SHA-256 */

typedef struct kernel_data kernel_data;

/* The set of obj: {"<file name>": {"dtype": "f32", "encoding": "base64", "data": "<base64>"}}
 * ("encoding" may be left out: base64 is the one accepted). Names are plain file names
 * (kernel_files_valid_name); each file holds a whole number of its dtype's elements, at least
 * one. NULL with err: the message names the field ("data.a.bin.dtype: ..." under where "data");
 * KT_ERR_BODY_TOO_LARGE past KDATA_MAX_FILES files or KDATA_MAX_BYTES decoded bytes. */
kernel_data *kernel_data_from_json(const json_t *obj, const char *where, kt_error *err);
void kernel_data_free(kernel_data *d);
int kernel_data_count(const kernel_data *d);
/* The index of name, or -1 (also for a NULL set). */
int kernel_data_find(const kernel_data *d, const char *name);
const char *kernel_data_name(const kernel_data *d, int i);
kt_dtype kernel_data_dtype(const kernel_data *d, int i);
/* The bytes of file i (owned by d) and their count. */
const unsigned char *kernel_data_bytes(const kernel_data *d, int i, size_t *len);
/* The lowercase hex SHA-256 of file i's bytes (owned by d). */
const char *kernel_data_sha256(const kernel_data *d, int i);
/* The canonical form kernel_data_from_json reads: every file with "dtype", "encoding": "base64"
 * and "data". New reference; NULL when out of memory. */
json_t *kernel_data_json(const kernel_data *d);

#endif
