/* uid_tally.c - see uid_tally.h. */
#include "uid_tally.h"

#include <stdlib.h>

static uid_tally_entry *find(const uid_tally *t, uid_t uid)
{
	for (int i = 0; i < t->len; i++)
		if (t->e[i].uid == uid)
			return &t->e[i];
	return NULL;
}

int uid_tally_get(const uid_tally *t, uid_t uid)
{
	const uid_tally_entry *x = find(t, uid);
	return x ? x->count : 0;
}

bool uid_tally_add(uid_tally *t, uid_t uid, int delta)
{
	uid_tally_entry *x = find(t, uid);
	if (!x) {
		if (delta <= 0)
			return true;
		if (t->len == t->cap) {
			int cap = t->cap ? t->cap * 2 : 4;
			uid_tally_entry *e = realloc(t->e, (size_t)cap * sizeof(*e));
			if (!e)
				return false;
			t->e = e;
			t->cap = cap;
		}
		x = &t->e[t->len++];
		x->uid = uid;
		x->count = 0;
	}
	x->count += delta;
	if (x->count <= 0)
		*x = t->e[--t->len];   /* the last one takes its place */
	return true;
}

void uid_tally_release(uid_tally *t)
{
	free(t->e);
	t->e = NULL;
	t->len = t->cap = 0;
}
