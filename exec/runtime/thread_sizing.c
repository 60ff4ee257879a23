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

/* The trial's count once the full count's runs are in: one for small
 * runs, half of 4 or more, 0 for no trial. */
static int trial_of(const mfs_sizing_slot *t, int n)
{
	if (n < 2)
		return 0;
	if (t->full_ns < SIZING_SMALL_NS)
		return 1;
	return n >= 4 ? n / 2 : 0;
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
	if (t->threads && ++t->kept_runs > SIZING_REDECIDE_RUNS)
		*t = (mfs_sizing_slot){ .rows = rows };   /* measure again (header) */
	if (t->threads)
		return t->threads < n ? t->threads : n;
	if (t->full_runs < SIZING_FULL_RUNS)
		return n;
	return trial_of(t, n);   /* undecided after the full runs: on trial */
}

/* Count one more run of ns and keep the fastest; true once `want` runs
 * are in. */
static bool fastest_of(int *runs, uint64_t *fastest, uint64_t ns, int want)
{
	if (!(*runs)++ || ns < *fastest)
		*fastest = ns;
	return *runs >= want;
}

void mfs_sizing_record(const mfs_sizing *s, mfs_sizing_slot *t, int planned, int n,
		       uint64_t ns)
{
	if (!t || t->threads)
		return;
	if (t->full_runs < SIZING_FULL_RUNS) {
		if (planned != n || !fastest_of(&t->full_runs, &t->full_ns, ns, SIZING_FULL_RUNS))
			return;
		if (s->no_half)
			t->threads = t->full_ns < SIZING_SMALL_NS ? 1 : n;
		else if (!trial_of(t, n))
			t->threads = n;
		return;
	}
	int trial = trial_of(t, n);
	if (planned != trial || !fastest_of(&t->trial_runs, &t->trial_ns, ns, SIZING_TRIAL_RUNS))
		return;
	/* one thread unless all are clearly faster; half only when clearly
	 * faster: 5% either way, and for one thread at least
	 * SIZING_MARGIN_NS too (5% of a 10 us run is noise) */
	if (trial == 1)
		t->threads = t->full_ns * 100 < t->trial_ns * 95 &&
			     t->full_ns + SIZING_MARGIN_NS < t->trial_ns ? n : 1;
	else
		t->threads = t->trial_ns * 100 < t->full_ns * 95 ? trial : n;
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
