/* bench/bench_main — `ktune bench`: the subcommand as cli/ktune.c calls it. One mode table (git.c's
 * command table is the model): each mode of `ktune bench` — offline replay (bench_run.h), device
 * (--kernel/--device, bench_device.h), --predict (bench_predict.h), --accel / --accel-predict
 * (bench_accel.h), --fisher (bench_fisher.h) — is a row {name, the flags that select it, its
 * arguments (bench_parse.h's bench_args), run, print}, and one driver parses the arguments, runs,
 * prints the table, writes --json and turns the outcome into an exit code. The top of bench/:
 * nothing in bench/ includes this header. */
#ifndef KT_BENCH_MAIN_H
#define KT_BENCH_MAIN_H

/* The whole subcommand: argv[0] is "bench". exe_dir: folder of the ktune binary (default reference
 * file, runner, kernels, devices, networks), or NULL. The mode is the first row whose selecting
 * flag is given (--accel or --accel-predict, --fisher, --predict, --device or --kernel), else the
 * offline mode. Returns the exit code: 0 (also after --help), 1 failure, 2 usage (a bad argument;
 * outside the offline mode also a run's 4xx error, about what was asked). */
int bench_main(int argc, char **argv, const char *exe_dir);

/* The same, with remote: who makes the offline mode's searchers when --remote or --server is given
 * (bench_args.h; cli/cli_bench_remote.h's is ktuned's through ask/tell), opened before the runs.
 * NULL: such a command line is a usage error (exit 2), the remote searchers being made above
 * bench/. */
struct bench_searcher_maker;
int bench_main_with(int argc, char **argv, const char *exe_dir,
                    const struct bench_searcher_maker *remote);

#endif
