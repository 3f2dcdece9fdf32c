/* Unit tests of measure/core_reserve: a reservation moves every thread of the process and a
 * stand-in postmaster with its child off the measuring core, only while held (counted), and gives
 * them every core back when the last holder leaves; threads started meanwhile follow. A guest (a
 * stand-in runner compiling, with its compilers) gets the core between measurements only, and its
 * processes started during one follow; a removed guest is left alone. Needs two
 * cores this process may run on: with one it says so and is skipped (exit 77, ctest's skip). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "measure/core_reserve.h"

static cpu_set_t g_wide;
static int g_core;

/* Whether task tid of process pid (tid == pid: the process) may run on g_core. */
static int may_run_on_core(pid_t tid)
{
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(tid, sizeof set, &set), 0);
    return CPU_ISSET(g_core, &set);
}

typedef struct sleeper {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
} sleeper;

static void *sleep_until_told(void *arg)
{
    sleeper *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* A stand-in postmaster: a child process that forks a child of its own, then waits. Its pid in
 * <dir>/postmaster.pid, as PostgreSQL writes it; *kid gets the grandchild's pid. */
static pid_t start_postmaster(const char *dir, pid_t *kid)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pm = fork();
    assert_true(pm >= 0);
    if (pm == 0) {
        pid_t g = fork();
        if (g == 0) {
            pause();
            _exit(0);
        }
        if (write(fds[1], &g, sizeof g) != (ssize_t)sizeof g)
            _exit(1);
        pause();
        _exit(0);
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], kid, sizeof *kid), (ssize_t)sizeof *kid);
    close(fds[0]);
    char path[512];
    snprintf(path, sizeof path, "%s/postmaster.pid", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%d\n/tmp/pgdata\n", (int)pm);
    fclose(f);
    return pm;
}

static void a_core_not_ours_is_refused(void **state)
{
    (void)state;
    kt_error err;
    kt_error_clear(&err);
    int outside = -1;
    for (int i = 0; i < CPU_SETSIZE && outside < 0; i++)
        outside = CPU_ISSET(i, &g_wide) ? -1 : i;
    assert_null(core_reserve_new(outside, NULL, &err));
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_non_null(strstr(err.message, "is not a core this process may run on"));
    /* NULL is a reservation of nothing */
    core_reserve_enter(NULL);
    assert_int_equal(core_reserve_held(NULL), 0);
    core_reserve_leave(NULL);
    core_reserve_free(NULL);
}

static void the_service_leaves_the_core_only_while_a_measurement_holds_it(void **state)
{
    (void)state;
    char dir[] = "/tmp/kt-core-reserve-XXXXXX";
    assert_non_null(mkdtemp(dir));
    pid_t kid = 0, pm = start_postmaster(dir, &kid);
    sleeper s = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    pthread_t before, during;
    assert_int_equal(pthread_create(&before, NULL, sleep_until_told, &s), 0);

    kt_error err;
    kt_error_clear(&err);
    core_reserve *r = core_reserve_new(g_core, dir, &err);
    assert_non_null(r);
    assert_true(may_run_on_core(0) && may_run_on_core(pm) && may_run_on_core(kid));
    assert_int_equal(core_reserve_held(r), 0);

    core_reserve_enter(r); /* a measurement starts */
    assert_int_equal(core_reserve_held(r), 1);
    assert_false(may_run_on_core(0));
    assert_false(may_run_on_core(pm));
    assert_false(may_run_on_core(kid));
    cpu_set_t set;
    assert_int_equal(pthread_getaffinity_np(before, sizeof set, &set), 0);
    assert_false(CPU_ISSET(g_core, &set));
    /* a thread started meanwhile inherits the service's mask */
    assert_int_equal(pthread_create(&during, NULL, sleep_until_told, &s), 0);
    assert_int_equal(pthread_getaffinity_np(during, sizeof set, &set), 0);
    assert_false(CPU_ISSET(g_core, &set));

    core_reserve_enter(r); /* a second holder: the first one's leave keeps the core reserved */
    core_reserve_leave(r);
    assert_int_equal(core_reserve_held(r), 1);
    assert_false(may_run_on_core(0));
    assert_false(may_run_on_core(kid));

    core_reserve_leave(r); /* the last one: every core back, to every thread and process */
    assert_int_equal(core_reserve_held(r), 0);
    assert_true(may_run_on_core(0));
    assert_true(may_run_on_core(pm));
    assert_true(may_run_on_core(kid));
    assert_int_equal(pthread_getaffinity_np(before, sizeof set, &set), 0);
    assert_true(CPU_EQUAL(&set, &g_wide));
    assert_int_equal(pthread_getaffinity_np(during, sizeof set, &set), 0);
    assert_true(CPU_EQUAL(&set, &g_wide));
    core_reserve_leave(r); /* an unmatched leave changes nothing */
    assert_int_equal(core_reserve_held(r), 0);

    core_reserve_free(r);
    pthread_mutex_lock(&s.mu);
    s.stop = 1;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    pthread_join(before, NULL);
    pthread_join(during, NULL);
    kill(kid, SIGKILL);
    kill(pm, SIGKILL);
    waitpid(pm, NULL, 0);
    char path[512];
    snprintf(path, sizeof path, "%s/postmaster.pid", dir);
    unlink(path);
    rmdir(dir);
}

/* A stand-in runner compiling apart: pinned to g_core as a runner is, it forks one "compiler" at
 * once (*kid) and another each time a byte comes on ctl (its pid written to reply), until ctl
 * closes. */
typedef struct guest {
    pid_t pid, kid;
    int ctl, reply;
} guest;

static void start_guest(guest *g)
{
    int c[2], r[2];
    assert_int_equal(pipe(c), 0);
    assert_int_equal(pipe(r), 0);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(g_core, &one);
    g->pid = fork();
    assert_true(g->pid >= 0);
    if (g->pid == 0) {
        close(c[1]);
        close(r[0]);
        if (sched_setaffinity(0, sizeof one, &one) != 0)
            _exit(1);
        char b = 0;
        do {
            pid_t k = fork();
            if (k == 0) {
                pause();
                _exit(0);
            }
            if (write(r[1], &k, sizeof k) != (ssize_t)sizeof k)
                _exit(1);
        } while (read(c[0], &b, 1) == 1);
        _exit(0);
    }
    close(c[0]);
    close(r[1]);
    g->ctl = c[1];
    g->reply = r[0];
    assert_int_equal(read(g->reply, &g->kid, sizeof g->kid), (ssize_t)sizeof g->kid);
    assert_int_equal(may_run_on_core(g->pid), 1); /* only there, as a measuring runner */
}

/* The guest forks another compiler now; its pid. */
static pid_t guest_forks(guest *g)
{
    pid_t k = 0;
    assert_int_equal(write(g->ctl, "f", 1), 1);
    assert_int_equal(read(g->reply, &k, sizeof k), (ssize_t)sizeof k);
    return k;
}

static void stop_guest(guest *g, pid_t more)
{
    kill(g->kid, SIGKILL);
    if (more > 0)
        kill(more, SIGKILL);
    close(g->ctl);
    close(g->reply);
    kill(g->pid, SIGKILL);
    waitpid(g->pid, NULL, 0);
}

static int has_every_core(pid_t pid)
{
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(pid, sizeof set, &set), 0);
    return CPU_EQUAL(&set, &g_wide);
}

static void a_compiling_guest_gets_the_core_only_between_measurements(void **state)
{
    (void)state;
    kt_error err;
    kt_error_clear(&err);
    core_reserve *r = core_reserve_new(g_core, NULL, &err);
    assert_non_null(r);
    guest g, late;
    start_guest(&g);

    /* added while no measurement runs: the runner and its compiler get every core */
    assert_int_equal(core_reserve_guest_add(r, g.pid), 1);
    assert_true(has_every_core(g.pid) && has_every_core(g.kid));

    core_reserve_enter(r); /* a measurement starts: the whole tree leaves the core */
    assert_false(may_run_on_core(g.pid));
    assert_false(may_run_on_core(g.kid));
    pid_t during = guest_forks(&g); /* a compiler started meanwhile inherits it */
    assert_false(may_run_on_core(during));
    /* a guest added while a measurement holds the core starts off it */
    start_guest(&late);
    assert_int_equal(core_reserve_guest_add(r, late.pid), 1);
    assert_false(may_run_on_core(late.pid));
    assert_false(may_run_on_core(late.kid));

    core_reserve_leave(r); /* between measurements: every core, to every process of both */
    assert_true(has_every_core(g.pid) && has_every_core(g.kid) && has_every_core(during));
    assert_true(has_every_core(late.pid) && has_every_core(late.kid));

    /* removed (its compile ended): the next measurement leaves it as it is */
    core_reserve_guest_remove(r, g.pid);
    core_reserve_guest_remove(r, g.pid); /* twice: nothing */
    core_reserve_enter(r);
    assert_true(has_every_core(g.pid));
    assert_false(may_run_on_core(late.pid));
    core_reserve_leave(r);
    core_reserve_guest_remove(r, late.pid);

    /* one that ended is no guest; nor is anything without a reservation */
    stop_guest(&late, 0);
    assert_int_equal(core_reserve_guest_add(r, late.pid), 0);
    assert_int_equal(core_reserve_guest_add(NULL, g.pid), 0);
    core_reserve_guest_remove(NULL, g.pid);
    stop_guest(&g, during);
    core_reserve_free(r);
}

static void without_a_database_the_threads_alone_move(void **state)
{
    (void)state;
    cpu_set_t narrow = g_wide;
    CPU_CLR(g_core, &narrow);
    /* pid 0: an external database, nothing of it is moved; every thread moves, none fails */
    assert_int_equal(core_reserve_apply(&narrow, 0), 0);
    assert_false(may_run_on_core(0));
    assert_int_equal(core_reserve_apply(&g_wide, 0), 0);
    assert_true(may_run_on_core(0));
}

int main(void)
{
    if (sched_getaffinity(0, sizeof g_wide, &g_wide) != 0 || CPU_COUNT(&g_wide) < 2) {
        printf("skipped: this process may run on fewer than 2 cores: nothing to reserve one of\n");
        return 77;
    }
    for (int i = CPU_SETSIZE - 1; i >= 0; i--)
        if (CPU_ISSET(i, &g_wide)) {
            g_core = i;
            break;
        }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_core_not_ours_is_refused),
        cmocka_unit_test(the_service_leaves_the_core_only_while_a_measurement_holds_it),
        cmocka_unit_test(without_a_database_the_threads_alone_move),
        cmocka_unit_test(a_compiling_guest_gets_the_core_only_between_measurements),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
