/* route_cache.c - see route_cache.h. */
#include "route_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cache_dir.h"
#include "file_util.h"
#include "log.h"

#define ROUTE_MAGIC "modelfs-engine-choice 1"
#define CHUNK (1u << 20)

/* ---- hashing: four independent lanes of 8-byte words, so the
 * multiplies overlap (a few GB/s), then one mix; not cryptographic ---- */

#define P1 0x9e3779b185ebca87ull
#define P2 0xc2b2ae3d27d4eb4full

typedef struct hasher {
	uint64_t lane[4];
	uint64_t total;
} hasher;

static uint64_t rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static void hasher_init(hasher *h, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		h->lane[i] = seed + P1 * (uint64_t)(i + 1);
	h->total = 0;
}

static uint64_t lane_step(uint64_t acc, uint64_t w)
{
	return rotl(acc ^ (w * P2), 31) * P1;
}

/* n: any length; only the last call may pass a length that is not a
 * multiple of 32 (its tail is folded in here). */
static void hasher_feed(hasher *h, const unsigned char *p, size_t n)
{
	size_t i = 0;
	for (; i + 32 <= n; i += 32)
		for (int k = 0; k < 4; k++) {
			uint64_t w;
			memcpy(&w, p + i + 8 * (size_t)k, 8);
			h->lane[k] = lane_step(h->lane[k], w);
		}
	for (int k = 0; i < n; k = (k + 1) & 3) {
		uint64_t w = 0;
		size_t m = n - i < 8 ? n - i : 8;
		memcpy(&w, p + i, m);
		h->lane[k] = lane_step(h->lane[k], w ^ ((uint64_t)m << 56));
		i += m;
	}
	h->total += n;
}

static uint64_t hasher_end(const hasher *h)
{
	uint64_t x = h->total * P2;
	for (int k = 0; k < 4; k++)
		x = rotl(x ^ h->lane[k], 27) * P1 + P2;
	x ^= x >> 33;
	x *= P2;
	x ^= x >> 29;
	return x;
}

uint64_t mfs_route_hash_bytes(const void *p, size_t n, uint64_t seed)
{
	hasher h;
	hasher_init(&h, seed);
	hasher_feed(&h, p, n);
	return hasher_end(&h);
}

int mfs_route_hash_file(const char *path, uint64_t *out, mfs_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	unsigned char *buf;
	hasher h;

	if (fd < 0)
		return mfs_fail(err, errno, "%s", strerror(errno));
	buf = malloc(CHUNK);
	if (!buf) {
		close(fd);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	hasher_init(&h, 0);
	for (;;) {
		size_t got = 0;
		ssize_t r = 1;
		while (got < CHUNK && (r = read(fd, buf + got, CHUNK - got)) > 0)
			got += (size_t)r;
		if (r < 0) {
			int e = errno;
			free(buf);
			close(fd);
			return mfs_fail(err, e, "read: %s", strerror(e));
		}
		hasher_feed(&h, buf, got);
		if (got < CHUNK)
			break;
	}
	free(buf);
	close(fd);
	*out = hasher_end(&h);
	return 0;
}

uint64_t mfs_route_hash_config(const mfs_model_config *cfg)
{
	static const char *const keys[] = {
		"input", "output", "max_batch_size", "optimization",
		"parameters", "model_warmup",
	};
	json_t *all = mfs_config_to_json(cfg), *kept = json_object();
	uint64_t h = 0;
	char *text;

	for (size_t i = 0; all && kept && i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_t *v = json_object_get(all, keys[i]);
		if (v)
			json_object_set(kept, keys[i], v);
	}
	text = kept ? json_dumps(kept, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (text)
		h = mfs_route_hash_bytes(text, strlen(text), 1);
	free(text);
	json_decref(kept);
	json_decref(all);
	return h;
}

/* ---- the entries ---- */

/* The key as one line of text (newlines in device names made spaces). */
static void key_text(const mfs_route_key *k, char *buf, size_t size)
{
	snprintf(buf, size, "model=%016" PRIx64 " config=%016" PRIx64
		 " batch=%" PRId64 " sample=%s opencl=%s driver=%s build=%s",
		 k->model_hash, k->config_hash, k->batch, k->sample, k->opencl, k->driver, k->build);
	for (char *c = buf; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
}

void mfs_route_cache_file(const char *dir, const mfs_route_key *key,
			  char *buf, size_t size)
{
	char text[1024];
	key_text(key, text, sizeof(text));
	snprintf(buf, size, "%s/%016" PRIx64 ".route", dir,
		 mfs_route_hash_bytes(text, strlen(text), 2));
}

static bool parse_ms(const char *s, double *out)
{
	char *end;
	if (!s)
		return false;
	errno = 0;
	*out = strtod(s, &end);
	return !errno && end != s && !*end && *out >= -1;
}

/* Parse text (cut into lines here) into e; the reason when it is not an
 * entry for want_key. */
static const char *parse_entry(char *text, const char *want_key, mfs_route_entry *e)
{
	const char *key = NULL, *dev = NULL, *cpu = NULL, *ocl = NULL, *note = "";
	char *save = NULL, *line = strtok_r(text, "\n", &save);

	if (!line || strcmp(line, ROUTE_MAGIC))
		return "not an engine-choice entry (first line)";
	while ((line = strtok_r(NULL, "\n", &save))) {
		char *sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		const char **slot = !strcmp(line, "key") ? &key : !strcmp(line, "device") ? &dev :
				    !strcmp(line, "cpu_ms") ? &cpu : !strcmp(line, "opencl_ms") ? &ocl :
				    !strcmp(line, "note") ? &note : NULL;
		if (slot)
			*slot = sp + 1;
	}
	if (!key || strcmp(key, want_key))
		return "written for another key";
	if (!dev || (strcmp(dev, "cpu") && strcmp(dev, "opencl")))
		return "no valid device line";
	if (!parse_ms(cpu, &e->cpu_ms))
		return "no valid cpu_ms line";
	if (!parse_ms(ocl, &e->opencl_ms))
		return "no valid opencl_ms line";
	snprintf(e->device, sizeof(e->device), "%s", dev);
	snprintf(e->note, sizeof(e->note), "%s", note);
	return NULL;
}

int mfs_route_cache_get(const char *dir, const mfs_route_key *key,
			mfs_route_entry *out)
{
	char path[1200], want[1024];
	char *text = NULL;
	size_t len;
	mfs_error err;

	mfs_route_cache_file(dir, key, path, sizeof(path));
	if (mfs_read_file(path, 64 * 1024, &text, &len, &err) < 0) {
		if (err.code != ENOENT)
			mfs_log_warn("engine-choice cache %s: ignored (%s)", path, err.msg);
		return 0;
	}
	key_text(key, want, sizeof(want));
	memset(out, 0, sizeof(*out));
	const char *why = strlen(text) == len ? parse_entry(text, want, out)
					      : "not text (a NUL byte)";
	free(text);
	if (why) {
		mfs_log_warn("engine-choice cache %s: ignored (%s); timing the engines again",
			     path, why);
		return 0;
	}
	return 1;
}

int mfs_route_cache_put(const char *dir, const mfs_route_key *key,
			const mfs_route_entry *e, mfs_error *err)
{
	char path[1200], tmp[1300], text[1024], note[320];
	FILE *f;

	if (mfs_make_dirs(dir) != 0)
		return mfs_fail(err, errno, "%s: %s", dir, strerror(errno));
	mfs_route_cache_file(dir, key, path, sizeof(path));
	key_text(key, text, sizeof(text));
	snprintf(note, sizeof(note), "%s", e->note);
	for (char *c = note; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	snprintf(tmp, sizeof(tmp), "%s.%d.%lx.tmp", path, (int)getpid(), (unsigned long)pthread_self());
	f = fopen(tmp, "w");
	if (!f)
		return mfs_fail(err, errno, "%s: %s", tmp, strerror(errno));
	fprintf(f, ROUTE_MAGIC "\nkey %s\ndevice %s\ncpu_ms %.6f\nopencl_ms %.6f\nnote %s\n",
		text, e->device, e->cpu_ms, e->opencl_ms, note);
	bool ok = !ferror(f);
	ok &= fclose(f) == 0;
	if (!ok || rename(tmp, path) != 0) {
		int saved = ok ? errno : EIO;
		unlink(tmp);
		return mfs_fail(err, saved, "%s: %s", path, strerror(saved));
	}
	return 0;
}
