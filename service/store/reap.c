/* store/reap — claims of dead runners let go (see reap.h). */
#include "store/reap.h"

#include <string.h>

#include "core/number.h"
#include "store/db.h"
#include "store/store_exec.h"
#include "store/store_util.h"

/* "<host>:<pid>:<start>": 1 with host (into buf) and pid, 0 when the id is not of that form. */
static int parse_runner(const char *id, char *host, size_t cap, int *pid)
{
    char digits[16];
    const char *last = strrchr(id, ':');
    if (!last || last == id)
        return 0;
    const char *p = last - 1;
    while (p > id && *p != ':')
        p--;
    if (*p != ':' || (size_t)(p - id) >= cap || (size_t)(last - p - 1) >= sizeof digits)
        return 0;
    memcpy(digits, p + 1, (size_t)(last - p - 1));
    digits[last - p - 1] = '\0';
    if (kt_parse_int(digits, 1, 0x7fffffff, pid) < 0)
        return 0;
    memcpy(host, id, (size_t)(p - id));
    host[p - id] = '\0';
    return 1;
}

int store_reap_dead(PGconn *c, const runner_identity *me, int stale_s, const store_reap_sql *q,
                    kt_error *err)
{
    store_num s;
    const char *p1[] = {store_ll(&s, stale_s)};
    PGresult *r = NULL;
    int freed = store_exec_count(c, q->release_stale, 1, p1, err);
    if (freed < 0)
        goto out;
    const char *p2[] = {me->id};
    if (!(r = db_exec(c, q->runners, 1, p2, err))) {
        freed = -1;
        goto out;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        char host[256];
        int pid = 0;
        const char *runner = PQgetvalue(r, i, 0);
        if (!parse_runner(runner, host, sizeof host, &pid) || strcmp(host, me->host) != 0)
            continue;
        if (pid != me->pid && store_pid_alive(pid))
            continue;
        const char *p3[] = {runner};
        int n = store_exec_count(c, q->release_runner, 1, p3, err);
        if (n < 0) {
            freed = -1;
            goto out;
        }
        freed += n;
    }
out:
    PQclear(r);
    return freed;
}
