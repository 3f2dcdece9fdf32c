/* catalog/kernel_files — the files of one kernel as data: name -> bytes, read from a kernel folder
 * or given inline (POST /v1/kernels, the kernels table), and what is derived from them: the
 * kernel's version (the hash of everything compiled: the canonical spec and every source byte,
 * quoted includes of the kernel's own files resolved) and a content-addressed copy on disk that a
 * runner compiles (never a path that could change under it).
 *
 * Lifecycle: kernel_files_new / kernel_files_from_dir / kernel_files_from_json -> kernel_files_add
 * -> kernel_files_get / kernel_files_version / kernel_files_materialise (any thread once filled)
 * -> kernel_files_free. The set owns copies of every name and byte. */
#ifndef KT_CATALOG_KERNEL_FILES_H
#define KT_CATALOG_KERNEL_FILES_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"

#define KFILES_MAX_FILES    32           /* files of one kernel */
#define KFILES_MAX_NAME     64           /* characters of a file name */
#define KFILES_MAX_BYTES    (1 << 20)    /* one folder file, and all files of a kernel together */
#define KFILES_MAX_INLINE   (256 * 1024) /* one file given inline (POST /v1/kernels) */
#define KFILES_VERSION_LEN  32           /* hex digits of a version: 128 bits of SHA-256 */
#define KFILES_MAX_INCLUDES 64           /* files of one compiled closure */

typedef struct kernel_files kernel_files;

kernel_files *kernel_files_new(void);
void kernel_files_free(kernel_files *f);
/* 1 when name is a plain file name: 1..KFILES_MAX_NAME of [A-Za-z0-9._-], not starting with '.'. */
int kernel_files_valid_name(const char *name);
/* Adds a copy of len bytes under name (replacing nothing: a name given twice is an error). Errors:
 * KT_ERR_BAD_REQUEST (name invalid or taken, a NUL byte in the text), KT_ERR_BODY_TOO_LARGE (more
 * than KFILES_MAX_FILES files or KFILES_MAX_BYTES in all). */
int kernel_files_add(kernel_files *f, const char *name, const char *bytes, size_t len,
                     kt_error *err);
/* Every regular text file of dir whose name is valid (others, subfolders, and data files: larger
 * than KFILES_MAX_BYTES or holding a NUL byte, are skipped), at most KFILES_MAX_BYTES in all. NULL
 * with KT_ERR_IO / KT_ERR_BODY_TOO_LARGE naming the file. */
kernel_files *kernel_files_from_dir(const char *dir, kt_error *err);
/* A folder's fingerprint without reading it: the names, sizes and modification times of the files
 * kernel_files_from_dir would read, hashed (0 when the folder cannot be listed). A change of any
 * of them means read it again. */
unsigned long long kernel_files_dir_stamp(const char *dir);
/* The files of a JSON object {"name": "text", ...} (POST /v1/kernels' "files", the kernels table):
 * each a string of at most KFILES_MAX_INLINE bytes, KFILES_MAX_BYTES in all. NULL with err: the
 * message names the field ("files.cpu.c: ..." under where "files") and says what to do;
 * KT_ERR_BODY_TOO_LARGE for the caps. */
kernel_files *kernel_files_from_json(const json_t *obj, const char *where, kt_error *err);
/* The bytes of name (NUL-terminated; *len their count when len is not NULL), or NULL. Owned by f.
 */
const char *kernel_files_get(const kernel_files *f, const char *name, size_t *len);
int kernel_files_count(const kernel_files *f);
const char *kernel_files_name(const kernel_files *f, int i);
/* {"name": "text"} of the files named in names[0..n) (all files when names is NULL); new
 * reference, NULL when out of memory. */
json_t *kernel_files_json(const kernel_files *f, const char *const *names, int n);

/* The compiled closure of roots[0..n_roots): the roots and, transitively, every file of f named by
 * a quoted include (`#include "x.h"`) in one of them; names sorted, each once, borrowed from f
 * (out holds at most KFILES_MAX_INCLUDES). Returns the count, or -1 with KT_ERR_BAD_REQUEST when a
 * root is not in f or the closure is larger. An include naming no file of f is left to the
 * compiler (a system header). */
int kernel_files_closure(const kernel_files *f, const char *const *roots, int n_roots,
                         const char **out, kt_error *err);
/* The version: SHA-256 (first KFILES_VERSION_LEN hex digits) of the spec text (callers pass the
 * canonical spec: sorted keys, compact) and of every file of the closure of roots, name and bytes.
 * Any byte changed in the spec or in a compiled file is another version; a file not compiled is
 * not part of it. 0, or -1 with err (kernel_files_closure's errors). */
int kernel_files_version(const kernel_files *f, const char *spec_text, const char *const *roots,
                         int n_roots, char out[KFILES_VERSION_LEN + 1], kt_error *err);
/* Writes the files named in names[0..n) into <root>/<version>/ (root created 0700 when missing:
 * the runners' user must not read it, they get the texts in their requests) unless that folder
 * exists already: the files go into a temporary folder (files read-only, the folder 0755)
 * renamed into place, so a reader never sees a part-written version
 * (content-addressed: the folder of a version never changes once it exists). The folder's path in
 * dir. 0, or -1 with KT_ERR_IO. */
int kernel_files_materialise(const kernel_files *f, const char *const *names, int n,
                             const char *root, const char *version, char *dir, size_t dir_cap,
                             kt_error *err);

#endif
