/* commands.h - the two things the modelfs binary does. */
#ifndef MFS_COMMANDS_H
#define MFS_COMMANDS_H

/* What --version (and run's -V) prints. */
#ifndef MODELFS_VERSION
#define MODELFS_VERSION "0.1.0"
#endif

/* `modelfs run [OPTIONS] REPOSITORY/MODEL NAME=FILE...`
 * (src/cli/cmd_run.c).  argv[0] is "run".  Returns the exit
 * status. */
int mfs_cmd_run(int argc, char **argv);

/* `modelfs [OPTIONS] REPOSITORY MOUNTPOINT`, --help, --version
 * (src/cli/cmd_mount.c).  Returns the exit status. */
int mfs_cmd_mount(int argc, char **argv);

#endif
