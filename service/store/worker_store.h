/* store/worker_store — the workers table: each measurement worker registers, reports what it
 * measures, and beats a heart; the reaper marks workers of dead processes and requeues the trials
 * they held, so a crash of any host never loses a trial. Connections come from the caller. */
#ifndef KT_STORE_WORKER_STORE_H
#define KT_STORE_WORKER_STORE_H

#include <jansson.h>
#include <libpq-fe.h>

#include "core/error.h"

int worker_store_register(PGconn *c, const char *id, const char *host, int pid,
                          const char *const *devices, int n_devices, kt_error *err);
/* status: "idle", "measuring" (current_trial > 0) or "stopped". */
int worker_store_set_state(PGconn *c, const char *id, const char *status, long long current_trial,
                           long long trials_done, kt_error *err);
/* Heart-beats every live worker of one process. */
int worker_store_heartbeat(PGconn *c, const char *host, int pid, kt_error *err);
/* Marks dead the workers whose heartbeat is older than stale_s or whose process (on this host,
 * other than me) is gone, then puts back to pending every running trial of a dead or stopped
 * worker. Returns how many trials were requeued. */
int worker_store_reap(PGconn *c, const char *host, int my_pid, const char *my_prefix, int stale_s,
                      kt_error *err);
/* {"workers":[...]} live ones first. */
json_t *worker_store_list_json(PGconn *c, kt_error *err);

#endif
