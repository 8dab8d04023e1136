/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER */
#include <stdio.h>
#include "cli.h"

int cmd_maps(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "gpuext maps: not built yet\n"); return 1; }
