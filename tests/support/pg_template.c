/* kt_pg_template DIR — makes DIR a data directory holding an embedded cluster that is created,
 * migrated to the newest schema, empty and stopped (what ktuned's first start makes, less the
 * rows a running ktuned writes), for tests to copy instead of running initdb and the migrations
 * for every ktuned or store test they start (tests/README.md, "Test databases"). DIR must not
 * exist or be empty. Exit 0 on success, 1 with the error and hint on stderr, 2 on bad usage. */
#include <stdio.h>

#include "core/error.h"
#include "store/db.h"
#include "store/migrate.h"
#include "store/pg_cluster.h"

int main(int argc, char **argv)
{
    kt_error err;
    pg_cluster *cluster = NULL;
    db_pool *pool = NULL;
    PGconn *c = NULL;
    int count = 0, rc = 1;

    if (argc != 2) {
        fprintf(stderr, "usage: kt_pg_template DIR\n");
        return 2;
    }
    kt_error_clear(&err);
    const migration *migs = migrate_builtin(&count);
    if (!(cluster = pg_cluster_start(argv[1], &err)) ||
        !(pool = db_pool_new(pg_cluster_conninfo(cluster), 1, &err)) ||
        !(c = db_acquire(pool, 10000, &err)) || migrate_apply(c, migs, count, &err) < 0) {
        fprintf(stderr, "kt_pg_template: %s (hint: %s)\n", err.message, err.hint);
        goto out;
    }
    rc = 0;
out:
    if (c)
        db_release(pool, c);
    db_pool_free(pool);
    pg_cluster_stop(cluster);
    return rc;
}
