/* core/file — reading a whole regular file into memory, with a size cap so that a wrong path (a
 * device, a huge log) cannot exhaust memory.
 *
 * Call order: text = kt_file_read_all(path, cap, &len, &err); use text[0..len) (NUL-terminated, so
 * it is also a C string when the file holds no NUL); free(text). On failure NULL and err says which
 * path and why: missing or unreadable (KT_ERR_IO), not a regular file (KT_ERR_IO), over cap bytes
 * (KT_ERR_IO), out of memory (KT_ERR_NO_MEMORY). Not for /proc or /sys files: their st_size is not
 * their length (0 or 4096), so they read as empty or short. */
#ifndef KT_CORE_FILE_H
#define KT_CORE_FILE_H

#include <stddef.h>

#include "core/error.h"

/* The contents of the regular file at path, of at most cap bytes, in a malloc'd NUL-terminated
 * buffer; *len (may be NULL) gets the byte count. */
char *kt_file_read_all(const char *path, size_t cap, size_t *len, kt_error *err);

#endif
