/* SPDX-License-Identifier: Apache-2.0 */
/* Subcommands of the gpuext CLI: each gets argv after the subcommand name
 * (argv[0] is the subcommand) and returns the process exit code. */
#ifndef GPUEXT_CLI_H
#define GPUEXT_CLI_H

#include "gpuext/gpuext.h"

int cmd_disasm(int argc, char **argv);
int cmd_run_prog(int argc, char **argv);
int cmd_maps(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_backends(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_codegen(int argc, char **argv);
int cmd_trace(int argc, char **argv);

/* Shared by subcommands: log to stderr with a "gpuext: " prefix (WARN always,
 * INFO/DEBUG with -v). */
extern int cli_verbosity;
void cli_print(enum gpuext_log_level level, const char *msg, void *user);

#endif
