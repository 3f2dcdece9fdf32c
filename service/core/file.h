/* core/file — reading a whole regular file into memory, with a size cap so that a wrong path (a
 * device, a huge log) cannot exhaust memory.
 *
 * Call order: text = kt_file_read_all(path, cap, &len, &err); use text[0..len) (NUL-terminated, so
 * it is also a C string when the file holds no NUL); free(text). On failure NULL and err says which
 * path and why: missing or unreadable (KT_ERR_IO), not a regular file (KT_ERR_IO), over cap bytes
 * (KT_ERR_IO), out of memory (KT_ERR_NO_MEMORY). Not for /proc or /sys files: their st_size is not
 * their length (0 or 4096), so they read as empty or short. kt_file_read_gz reads gzip-compressed
 * files (or plain ones, or standard input) the same way. */
#ifndef KT_CORE_FILE_H
#define KT_CORE_FILE_H

#include <stddef.h>

#include "core/error.h"

/* The contents of the regular file at path, of at most cap bytes, in a malloc'd NUL-terminated
 * buffer; *len (may be NULL) gets the byte count. */
char *kt_file_read_all(const char *path, size_t cap, size_t *len, kt_error *err);
/* The same for a file that may be gzip-compressed (zlib's gzread passes plain files through): the
 * uncompressed contents, of at most cap bytes, NUL-terminated, malloc'd. path "-" reads standard
 * input (left open). Any file that opens is read (no regular-file check, no st_size: the length is
 * only known once read), so cap is what bounds memory. Errors as kt_file_read_all, the over-cap
 * one saying "(uncompressed)". */
char *kt_file_read_gz(const char *path, size_t cap, size_t *len, kt_error *err);

#endif
