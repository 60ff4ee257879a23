/* thread_sizing.c - see thread_sizing.h. */
#include "thread_sizing.h"

#include <stddef.h>

static mfs_sizing_slot *find(const mfs_sizing *s, int64_t rows)
{
	for (int i = 0; i < s->n_slots; i++)
		if (s->slot[i].rows == rows)
			return (mfs_sizing_slot *)&s->slot[i];
	return NULL;
}

/* The half trial's count. */
static int half_of(int n)
{
	return n / 2 > 0 ? n / 2 : 1;
}

int mfs_sizing_plan(mfs_sizing *s, int64_t rows, int n, mfs_sizing_slot **slot)
{
	mfs_sizing_slot *t = find(s, rows);

	if (!t && s->n_slots < SIZING_SLOTS) {
		t = &s->slot[s->n_slots++];
		*t = (mfs_sizing_slot){ .rows = rows };
	}
	*slot = t;
	if (!t)
		return n;
	if (t->threads)
		return t->threads < n ? t->threads : n;
	if (t->full_runs < SIZING_FULL_RUNS)
		return n;
	/* the full count's runs are in, the half trial is under way */
	return half_of(n);
}

void mfs_sizing_record(const mfs_sizing *s, mfs_sizing_slot *t, int planned, int n,
		       uint64_t ns)
{
	if (!t || t->threads)
		return;
	if (t->full_runs < SIZING_FULL_RUNS) {
		if (planned != n)
			return;
		if (!t->full_runs++ || ns < t->full_ns)
			t->full_ns = ns;
		if (t->full_runs < SIZING_FULL_RUNS)
			return;
		if (t->full_ns < SIZING_SMALL_NS)
			t->threads = 1;
		else if (n < 4 || s->no_half)
			t->threads = n;
		return;
	}
	if (planned != half_of(n))
		return;
	if (!t->half_runs++ || ns < t->half_ns)
		t->half_ns = ns;
	if (t->half_runs < SIZING_HALF_RUNS)
		return;
	/* half only when it is clearly faster: 5% */
	t->threads = t->half_ns * 100 < t->full_ns * 95 ? half_of(n) : n;
}

bool mfs_sizing_settled(const mfs_sizing *s, int64_t rows, int n)
{
	const mfs_sizing_slot *t = find(s, rows);
	/* n < 1: the library's defaults, nothing to decide; a full table:
	 * these rows are never decided */
	return n < 1 || (t ? t->threads != 0 : s->n_slots >= SIZING_SLOTS);
}

int mfs_sizing_threads(const mfs_sizing *s, int64_t rows)
{
	const mfs_sizing_slot *t = find(s, rows);
	return t ? t->threads : 0;
}
