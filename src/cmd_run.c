/* cmd_run.c - placeholder until `modelfs run` lands (owned by the
 * config-run work; replace whole). */
#include <stdio.h>

#include "commands.h"

int mfs_cmd_run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "modelfs run: not built yet\n");
	return 2;
}
