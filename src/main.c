/* main.c - dispatch to the command (see commands.h). */
#include <string.h>

#include "commands.h"

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "run") == 0)
		return mfs_cmd_run(argc - 1, argv + 1);
	return mfs_cmd_mount(argc, argv);
}
