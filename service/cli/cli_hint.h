/* cli/cli_hint — the API's hints in the words of the command line (issue 31). ktuned's hints name
 * REST calls (`POST /v1/tune {...}`, `?tune_on_miss=N`); a user of `ktune` gets the ktune command
 * that does the same (`ktune tune --kernel gemm --device cpu --problem K=1024,M=1024,N=1024
 * --wait`, `--tune-on-miss N`). A reference with no command of its own (GET /v1/kernels) is kept.
 *
 * Pure: no allocation that outlives the call (jansson parses a body and frees it). */
#ifndef KT_CLI_HINT_H
#define KT_CLI_HINT_H

#include <stddef.h>

/* hint with its REST references rewritten as ktune commands, into out (truncated to cap). Returns
 * the number of references rewritten (0: out is hint as it was). */
int cli_hint_translate(const char *hint, char *out, size_t cap);

#endif
