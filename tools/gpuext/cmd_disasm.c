/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER */
#include <stdio.h>
#include "cli.h"

int cmd_disasm(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "gpuext disasm: not built yet\n"); return 1; }
