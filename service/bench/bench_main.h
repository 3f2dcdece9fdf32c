/* bench/bench_main — `ktune bench`: the subcommand as cli/ktune.c calls it. Parses the arguments,
 * runs (offline: bench_run.h, with --device/--kernel: bench_device.h, with --accel or
 * --accel-predict: bench_accel.h), prints the table (bench_report.h, bench_device_report.h,
 * bench_accel.h) and writes --json. The top of bench/: nothing in bench/
 * includes this header. */
#ifndef KT_BENCH_MAIN_H
#define KT_BENCH_MAIN_H

/* The whole subcommand: argv[0] is "bench". exe_dir: folder of the ktune binary (default reference
 * file, runner and kernels), or NULL. Returns the exit code: 0, 1 failure, 2 usage (in device mode
 * also for the 4xx errors of bench_device_run). */
int bench_main(int argc, char **argv, const char *exe_dir);
/* The device mode alone (bench_main calls it when bench_device_wanted); same arguments and codes.
 */
int bench_device_main(int argc, char **argv, const char *exe_dir);
/* The prediction report alone (bench_main calls it when bench_predict_wanted: --predict). */
int bench_predict_main(int argc, char **argv, const char *exe_dir);
/* The accel report alone (bench_main calls it when bench_accel_wanted: --accel or
 * --accel-predict; bench_accel.h). */
int bench_accel_main(int argc, char **argv, const char *exe_dir);
/* The Fisher Potential validation alone (bench_main calls it when bench_fisher_wanted: --fisher;
 * bench_fisher.h). */
int bench_fisher_main(int argc, char **argv, const char *exe_dir);

#endif
