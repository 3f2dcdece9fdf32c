/* store/token_store — the api_tokens table (sql/008): API tokens kept as the SHA-256 of their
 * secret, with a name and a scope ("read", "tune", "kernels" or "admin"); and the per-submitter
 * count of active jobs behind --max-queued-jobs-per-token (jobs.submitter). The secret itself is
 * never stored: api/tokens.c makes it, hands it out once and keeps only its hash. */
#ifndef KT_STORE_TOKEN_STORE_H
#define KT_STORE_TOKEN_STORE_H

#include <jansson.h>
#include <libpq-fe.h>

#include "core/error.h"
#include "core/sha256.h"

#define TOKEN_STORE_MAX      1000 /* tokens in the table at most */
#define TOKEN_STORE_NAME_MAX 64

typedef struct token_row {
    long long id;
    char scope[8]; /* "read", "tune", "kernels", "admin" */
    unsigned char hash[KT_SHA256_SIZE];
} token_row;

/* Inserts a token; returns {"id","name","scope","created_at"} (new reference) or NULL with err
 * (KT_ERR_CONFLICT when TOKEN_STORE_MAX tokens exist). name and scope are validated by the caller.
 */
json_t *token_store_create(PGconn *c, const char *name, const char *scope,
                           const unsigned char hash[KT_SHA256_SIZE], kt_error *err);
/* {"tokens":[{"id","name","scope","created_at"}...]} by id: never a secret nor its hash. */
json_t *token_store_list_json(PGconn *c, kt_error *err);
/* Removes token id; KT_ERR_NOT_FOUND when there is none. */
int token_store_delete(PGconn *c, long long id, kt_error *err);
/* Every token (at most TOKEN_STORE_MAX) into *rows (malloc'd, caller frees; NULL when *n is 0). */
int token_store_load(PGconn *c, token_row **rows, int *n, kt_error *err);

/* Queued + running jobs of submitter ("token:<id>", "startup", "anonymous"). */
int token_store_active_jobs(PGconn *c, const char *submitter, long long *n, kt_error *err);

#endif
