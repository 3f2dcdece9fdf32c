/* neural/nn_stop — the stop check of a long computation (nn_stop.h). */
#include "neural/nn_stop.h"

#include "core/clock.h"

int nn_stop_asked(const nn_stop *s)
{
    if (!s)
        return NN_RUN;
    if (s->fn && s->fn(s->arg))
        return NN_STOPPED;
    if (s->deadline > 0 && kt_clock_s() > s->deadline)
        return NN_TIMED_OUT;
    return NN_RUN;
}
