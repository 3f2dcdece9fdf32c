/* worker/worker_internal — state shared by the runner and measurement threads of one worker_system.
 * Internal to worker/. The mutex guards the counters and the stop flag; the condition variable
 * wakes measurers when trials were queued and the runner when trials finished or a job was queued.
 */
#ifndef KT_WORKER_INTERNAL_H
#define KT_WORKER_INTERNAL_H

#include <pthread.h>

#include "store/job_store.h"
#include "worker/target_cache.h"
#include "training/trainer.h"
#include "worker/worker.h"

/* The reaper's limit for jobs, trials and models (a heartbeat older than this means the process
 * is gone): the lease, --lease-s, in whole seconds. */
#define WORKER_STALE_S(w) worker_stale_s(&(w)->opt)

/* Slots of the per-job generations of ask/tell waits (jobs sharing a slot only wake each other). */
#define WORKER_JOB_SLOTS 64

/* Jobs a runner round may step alone after tells (more: a full round). */
#define WORKER_TOLD_MAX 64

/* Target cache entries beyond those drivers and measuring threads can hold at once. */
#define TARGET_CACHE_SPARE 16

typedef struct measurer_arg {
    struct worker_system *w;
    int index;
    /* Guarded by w->lock: the job of the trial the thread is measuring (0: none) and whether it was
     * told to give that measurement up (worker_system_job_ended). */
    long long job_id;
    int stop;
} measurer_arg;

struct worker_system {
    worker_options opt;
    char host[256];
    int pid;
    char id[384]; /* "<host>:<pid>:<start ms>" — runner id and worker id prefix */
    runner_identity me;
    target_cache *targets; /* the jobs' targets, shared by the runner and the measurers */
    trainer *trainer;      /* the model trainer thread; NULL until started */
    char **devices;        /* names of the catalog's devices, measured by this process */
    int *kinds;            /* their kinds (kt_device_kind, -1: no device name), parsed once */
    char **classes;        /* their classes and toolchains (trial claims match the job's) */
    char **toolchains;
    int n_devices;
    char *classes_json; /* the classes as a JSON array text, for the trainer's claims */

    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stopping;
    unsigned long queued_gen; /* bumped when trials are inserted or requeued */
    unsigned long runner_gen; /* bumped when a trial is finished or a job is queued */
    /* Ask/tell (worker_system_wait_job): per job (slot job id % WORKER_JOB_SLOTS), bumped when the
     * runner queued trials of the job or the job ended here. */
    unsigned long job_gen[WORKER_JOB_SLOTS];
    /* Jobs told results since the runner last looked (worker_system_job_told), and told_gen, the
     * part of runner_gen's bumps that were tells: runner_gen - told_gen changing means another
     * wake (a job queued, a trial measured), which needs a full round. */
    unsigned char job_busy[WORKER_JOB_SLOTS]; /* a tell's step is pending (wait_stepped) */
    long long told[WORKER_TOLD_MAX];
    int n_told;
    int told_overflow;
    unsigned long told_gen;
    worker_stats stats;

    pthread_t runner_thread;
    pthread_t validator_thread; /* worker/validator.h: kernels submitted over HTTP */
    int validator_started;
    pthread_t *measurer_threads;
    measurer_arg *measurer_args;
    int n_measurers_started;
    int runner_started;
};

void *runner_main(void *arg);
void *measurer_main(void *arg);

/* Waits until *gen differs from seen, the system stops, or timeout_ms pass; returns the current
 * value. */
unsigned long worker_wait(worker_system *w, const unsigned long *gen, unsigned long seen,
                          int timeout_ms);
void worker_bump(worker_system *w, unsigned long *gen);
/* Bumps job_id's generation (and queued_gen, for the measurers, when measured is set: a job of the
 * external device has no trial a measurer could claim, so its steps wake only its asks) in one
 * broadcast. */
void worker_bump_job(worker_system *w, long long job_id, int measured);
/* The runner stepped job_id: a pending tell's step is done (worker_system_wait_stepped). */
void worker_job_stepped(worker_system *w, long long job_id);
int worker_stopping(worker_system *w);
/* The lease in whole seconds (at least 1). */
int worker_stale_s(const worker_options *opt);

#endif
