/* worker/validator — the thread that validates kernels submitted over HTTP (issue 27): claims a
 * validating version of the kernels table, measures its default configuration on the test problem
 * on a device of each variant's kind (compile, run, verify), and records ready or invalid with the
 * log. Started by worker_system_start in a process that has a cpu or cuda device; stops with it. */
#ifndef KT_WORKER_VALIDATOR_H
#define KT_WORKER_VALIDATOR_H

/* The thread's body; arg is the worker_system. */
void *validator_main(void *arg);

#endif
