/* uid_tally.h - how many of something each uid holds: the live request
 * directories each user has under one model, so that --max-requests-per-uid
 * can keep one user from taking every one of the model's --max-requests
 * (docs/SECURITY.md).  A small array, searched linearly: the users that
 * reach one mount are few.  An entry goes when its count comes back to 0.
 * Not locked: the owner's lock (fs->lock) covers it.
 */
#ifndef MFS_UID_TALLY_H
#define MFS_UID_TALLY_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct uid_tally_entry {
	uid_t uid;
	int count;
} uid_tally_entry;

typedef struct uid_tally {
	uid_tally_entry *e;   /* malloc'd; NULL while empty */
	int len, cap;
} uid_tally;              /* zero-initialised is empty */

/* uid's count (0 for a uid it has not seen). */
int uid_tally_get(const uid_tally *t, uid_t uid);

/* Add delta (+1 or -1) to uid's count.  false only when a uid not yet
 * counted cannot be added (out of memory); nothing changes then.  A
 * count is never taken below 0. */
bool uid_tally_add(uid_tally *t, uid_t uid, int delta);

/* Free the entries; the tally is empty again. */
void uid_tally_release(uid_tally *t);

#endif
