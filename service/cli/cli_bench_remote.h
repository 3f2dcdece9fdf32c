/* cli/cli_bench_remote — `ktune bench` as the ktune command runs it: bench/'s subcommand with a
 * maker of remote searchers (bench_args.h's bench_searcher_maker) for --remote / --server. A
 * remote searcher is ktuned's searcher, reached through ask/tell (issue 27): creating it POSTs an
 * external job (the replay space's parameters and configurations inline, the strategy, the seed,
 * history "none", parallel = --batch, budget = the run's evaluations); its ask POSTs
 * /v1/jobs/{id}/ask and maps each leased trial's configuration to the space's id; its tell POSTs
 * /tell with each trial's status and time; freeing it cancels the job when it is still running.
 * The replayed cache still evaluates, so bench_loop and every figure are the offline mode's.
 *
 * Call order: cli_bench_main (it opens the connection only when --remote or --server is given,
 * and frees everything before it returns). */
#ifndef KT_CLI_BENCH_REMOTE_H
#define KT_CLI_BENCH_REMOTE_H

/* `ktune bench`: argv[0] is "bench"; exe_dir as bench_main takes it. Returns its exit code. */
int cli_bench_main(int argc, char **argv, const char *exe_dir);

#endif
