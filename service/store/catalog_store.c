#include "store/catalog_store.h"

#include <stdlib.h>

#include "store/db.h"
#include "store/store_util.h"

int catalog_store_sync(PGconn *c, const json_t *devices, const json_t *kernels, kt_error *err)
{
    char *devs = store_json_text(devices);
    char *kers = store_json_text(kernels);
    const char *pd[] = {devs ? devs : "[]"};
    const char *pk[] = {kers ? kers : "[]"};
    /* Read by no one yet: issue 11's API lists the devices of workers on other hosts from here. */
    int rc =
        db_run(c,
               "INSERT INTO devices (name, kind, class, available, reason, description)"
               " SELECT d->>'name', COALESCE(d->>'kind', ''), COALESCE(d->>'class', d->>'name'),"
               " COALESCE((d->>'available')::boolean, true), d->>'reason', "
               "COALESCE(d->'description', '{}')"
               " FROM jsonb_array_elements($1::jsonb) AS d ON CONFLICT (name) DO UPDATE SET"
               " kind = EXCLUDED.kind, class = EXCLUDED.class, available = EXCLUDED.available,"
               " reason = EXCLUDED.reason, description = EXCLUDED.description, updated_at = now()",
               1, pd, err);
    if (rc == 0)
        rc = db_run(c,
                    "INSERT INTO kernels (name, description) SELECT k->>'name', k FROM"
                    " jsonb_array_elements($1::jsonb) AS k ON CONFLICT (name) DO UPDATE SET"
                    " description = EXCLUDED.description, updated_at = now()",
                    1, pk, err);
    free(devs);
    free(kers);
    return rc;
}
