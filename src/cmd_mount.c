/* cmd_mount.c - placeholder until the FUSE daemon lands (owned by the fs
 * work; replace whole). */
#include <stdio.h>

#include "commands.h"

int mfs_cmd_mount(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "modelfs: mounting is not built yet\n");
	return 2;
}
