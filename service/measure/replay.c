/* measure/replay — the replay backend: a trial is looked up in a recorded dataset instead of run.
 * Its recorded compile and measure costs are the trial's virtual clock; with a replay speed > 0 the
 * backend also sleeps that long (scaled) so that a job can be watched progressing in real time. */
#include "measure/backend_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "space/space.h"

#define REPLAY_MAX_SLEEP_MS  10000.0 /* per trial, whatever the recorded cost and speed */
#define REPLAY_STOP_SLICE_MS 100.0   /* with a stop check, sleeps are cut into slices this long */

typedef struct replay_backend {
    const replay_dataset *ds;
    double speed;
} replay_backend;

void *replay_open(const catalog *c, const char *device, kt_error *err)
{
    const replay_dataset *ds = catalog_find_replay(c, device);
    replay_backend *b = backend_state_new(ds, device, sizeof *b, err);
    if (!b)
        return NULL;
    b->ds = ds;
    b->speed = catalog_replay_speed(c);
    return b;
}

static void sleep_exactly_ms(double ms)
{
    long long ns = (long long)(ms * 1e6);
    struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Sleeps ms (at most REPLAY_MAX_SLEEP_MS); 1 when the stop check said stop first. */
static int sleep_ms(double ms, const backend_stop *stop)
{
    if (!(ms > 0))
        return 0;
    if (ms > REPLAY_MAX_SLEEP_MS)
        ms = REPLAY_MAX_SLEEP_MS;
    while (ms > 0) {
        double slice = stop && stop->fn && ms > REPLAY_STOP_SLICE_MS ? REPLAY_STOP_SLICE_MS : ms;
        sleep_exactly_ms(slice);
        ms -= slice;
        if (ms > 0 && stop && stop->fn && stop->fn(stop->arg))
            return 1;
    }
    return 0;
}

static json_t *recorded_time_json(const replay_record *r)
{
    switch (r->time_kind) {
    case REPLAY_TIME_NUMBER:
        return json_real(r->time_ms);
    case REPLAY_TIME_STRING:
        return json_string(r->time_text);
    default:
        return json_null();
    }
}

int replay_measure(void *impl, const target *t, config_id id, const backend_stop *stop,
                   trial_result *out, kt_error *err)
{
    replay_backend *b = impl;
    const replay_dataset *ds = b->ds;

    trial_result_init(out);
    const space *sp = dataset_space(ds);
    if (!t || t->sp != sp)
        return kt_error_set(err, KT_ERR_INTERNAL, "target is not a target of device %s",
                            dataset_device(ds));
    if (id >= space_count(sp))
        return kt_error_set(
            err, KT_ERR_INTERNAL, "configuration id %llu is outside the space of %s (%llu)",
            (unsigned long long)id, dataset_device(ds), (unsigned long long)space_count(sp));
    const replay_record *r = dataset_record(ds, id);
    if (!r) {
        out->status = TRIAL_INVALID;
        out->extras = json_pack("{s:b, s:s}", "replay", 1, "reason", "not recorded");
        return 0;
    }
    out->status = r->status;
    out->time_ms = r->status == TRIAL_OK ? r->time_ms : 0.0;
    out->repeats = r->status == TRIAL_OK ? r->repeats : 0;
    out->noise_cv = r->noise_cv;
    out->compile_ms = r->compile_ms;
    out->measure_ms = r->measure_ms;
    out->extras = json_pack("{s:b, s:o}", "replay", 1, "recorded_time", recorded_time_json(r));
    if (b->speed > 0 && sleep_ms(b->speed * (r->compile_ms + r->measure_ms), stop)) {
        trial_result_release(out);
        trial_result_init(out);
        return BACKEND_STOPPED;
    }
    return 0;
}

void replay_close(void *impl)
{
    free(impl);
}
