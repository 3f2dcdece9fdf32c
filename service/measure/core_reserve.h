/* measure/core_reserve — keeps the service off the CPU measuring core while a CPU measurement runs,
 * and gives the core back to it in between.
 *
 * A cpu runner times kernels on one core (--cpu-core). ktuned used to keep itself and every child
 * (its embedded PostgreSQL among them) off that core for its whole life, so on a machine with few
 * cores the HTTP API, the job drivers and the database shared what was left even when no CPU
 * kernel was being measured (on 2 cores: one core for everything; issue 27's ask/tell throughput
 * was bounded by it). A reservation is taken by each CPU measurement, under the device's lock:
 * the first holder moves every thread of this process and the embedded cluster's postmaster and
 * its children (backends, writers) off the core; the last to leave moves them back. Processes and
 * threads started meanwhile inherit the mask of their parent, so they follow. A measuring runner is
 * not touched: it pins itself to the core (runner/main.c, and again at each measure).
 *
 * Guests (issue 32): a runner compiling apart (measure/real_backend.c) may use the measuring core
 * too while no measurement holds it, so a 2-core machine compiles on both cores 80-90% of the
 * time instead of on one. From core_reserve_guest_add to core_reserve_guest_remove, the runner and
 * every process it starts (the compiler driver, cc1, as, ld) are moved like the service: off the
 * core by each first enter, back on by each last leave. A guest the reservation cannot move (not
 * this process's, or the table full) is refused, and its runner keeps its compile off the core
 * itself, as before.
 *
 * Call order: core_reserve_new (once, after the embedded cluster started, before any measurement)
 * -> core_reserve_enter / core_reserve_leave around each measurement, from any thread, always in
 * pairs; core_reserve_guest_add / core_reserve_guest_remove around each compile apart, in pairs ->
 * core_reserve_free at shutdown (no holder or guest left). Every function takes NULL and does
 * nothing: without a measuring core there is nothing to reserve. The reservation owns nothing but
 * itself; pgdata is copied. A failure to move a process (it ended, or belongs to a user this
 * process may not touch) is logged once and the measurement goes on: timing fidelity degrades, the
 * service does not stop. */
#ifndef KT_MEASURE_CORE_RESERVE_H
#define KT_MEASURE_CORE_RESERVE_H

#include <sched.h>
#include <sys/types.h>

#include "core/error.h"

typedef struct core_reserve core_reserve;

/* A reservation of core for this process's measurements. pgdata: the embedded cluster's data
 * folder (its postmaster.pid names the postmaster, read at each move: a restarted cluster is
 * followed), or NULL for none (an external database is not this process's to move). The
 * process's affinity now is what the service gets back between measurements. NULL with err when
 * core is not in that affinity (KT_ERR_CONFIG) or out of memory. */
core_reserve *core_reserve_new(int core, const char *pgdata, kt_error *err);
void core_reserve_enter(core_reserve *r);
void core_reserve_leave(core_reserve *r);
/* Registers pid (a runner about to compile) as a guest: its process tree gets the measuring core
 * now unless a measurement holds it, and follows every enter and leave until removed. 1 when it
 * is a guest, 0 when it could not be moved (r NULL, pid gone or not this process's to move, the
 * table of CORE_RESERVE_GUESTS_MAX full): the caller keeps it off the core another way. */
int core_reserve_guest_add(core_reserve *r, pid_t pid);
/* Ends pid's guest time (its tree keeps the mask it has: the runner pins itself again). */
void core_reserve_guest_remove(core_reserve *r, pid_t pid);
/* Whether a measurement holds the core now (tests, logs). */
int core_reserve_held(core_reserve *r);
void core_reserve_free(core_reserve *r);

/* The moves themselves, for tests and for core_reserve_enter/leave: sets mask on every thread of
 * this process (until a pass finds none to change, at most a few passes, so threads started during
 * a pass are caught), and on pid's process tree when pid > 0 (core_reserve_apply_tree). Returns
 * how many threads or processes could not be moved (0: all). */
int core_reserve_apply(const cpu_set_t *mask, pid_t pid);
/* Sets mask on root and every process below it (breadth first, at most 4,097), in passes
 * until one changes none (a child forked during a pass). Returns how many could not be moved (a
 * process whose children cannot be listed counts); 0 too when root itself ended. */
int core_reserve_apply_tree(const cpu_set_t *mask, pid_t root);

#endif
