/* model_control.h - Triton's model control modes and the words a shell
 * writes into MOUNT/<model>/control (SPEC.md section 8, docs/RELOAD.md).
 *
 *   poll       follow the repository (inotify, or --poll-secs): today's
 *              behaviour and the default
 *   none       load every model at start; nothing is watched; SIGHUP
 *              still looks at the repository again
 *   explicit   load only what --load-model names; every other repository
 *              model is listed UNAVAILABLE ("not loaded") until a shell
 *              writes "load" into its control file
 *
 * Pure parsing: no state, no I/O.
 */
#ifndef MFS_MODEL_CONTROL_H
#define MFS_MODEL_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

typedef enum mfs_control_mode {
	MFS_CONTROL_POLL = 0,
	MFS_CONTROL_NONE,
	MFS_CONTROL_EXPLICIT,
} mfs_control_mode;

/* "poll", "none", "explicit" -> the mode; -1 for anything else. */
int mfs_control_mode_parse(const char *s);
const char *mfs_control_mode_name(mfs_control_mode m);

typedef enum mfs_control_verb {
	MFS_CONTROL_LOAD = 0,      /* load, or reload what changed on the disk */
	MFS_CONTROL_UNLOAD,        /* unload; the model stays listed */
} mfs_control_verb;

/* One write into a control file: exactly a verb, or a verb and one
 * newline ("load\n" from echo, "unload" from printf); nothing else, no
 * blank, no NUL byte, no second word.  first: whether this is the first
 * write on its open(); a later one is refused whatever it says (a shell's
 * printf 'load\nunload' writes each line on its own: one command per
 * open() keeps the second from running).  -EINVAL quotes what was written
 * (its first 40 bytes, NUL bytes as \x00, escaped) and says what is
 * accepted. */
int mfs_control_parse(const char *buf, size_t len, bool first, mfs_control_verb *out,
		      mfs_error *err);

#endif
