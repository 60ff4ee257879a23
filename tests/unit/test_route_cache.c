/* test_route_cache.c - the engine choices kept on disk (route_cache.h):
 * a stored entry comes back, another key misses, a corrupt or foreign
 * entry is ignored (and overwritten), files appear by rename only, the
 * file hash follows the bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include <cmocka.h>

#include "route_cache.h"

static char dir[256];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/metrics-test-route-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static mfs_route_key key_of(uint64_t model)
{
	mfs_route_key k = { .model_hash = model, .config_hash = 7, .batch = 4 };
	snprintf(k.opencl, sizeof(k.opencl), "Portable Computing Language / cpu");
	snprintf(k.driver, sizeof(k.driver), "5.0");
	snprintf(k.build, sizeof(k.build), "0123abcd");
	return k;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_put_get(void **state)
{
	(void)state;
	char routes[300];
	snprintf(routes, sizeof(routes), "%s/routes/sub", dir);   /* made if missing */
	mfs_route_key k = key_of(1);
	mfs_route_entry e = { .device = "opencl", .cpu_ms = 3.5, .opencl_ms = 1.25,
			      .note = "auto: cpu 3.5 ms, opencl\n1.25 ms" };
	mfs_route_entry got;
	mfs_error err;
	assert_int_equal(mfs_route_cache_get(routes, &k, &got), 0);
	assert_int_equal(mfs_route_cache_put(routes, &k, &e, &err), 0);
	assert_int_equal(mfs_route_cache_get(routes, &k, &got), 1);
	assert_string_equal(got.device, "opencl");
	assert_true(got.cpu_ms == 3.5 && got.opencl_ms == 1.25);
	assert_string_equal(got.note, "auto: cpu 3.5 ms, opencl 1.25 ms");   /* one line */
	/* another model, batch or device misses */
	mfs_route_key other = key_of(2);
	assert_int_equal(mfs_route_cache_get(routes, &other, &got), 0);
	other = key_of(1);
	other.batch = 8;
	assert_int_equal(mfs_route_cache_get(routes, &other, &got), 0);
	other = key_of(1);
	snprintf(other.driver, sizeof(other.driver), "6.0");
	assert_int_equal(mfs_route_cache_get(routes, &other, &got), 0);
	/* another modelfs build (an upgrade) misses */
	other = key_of(1);
	snprintf(other.build, sizeof(other.build), "another-build");
	assert_int_equal(mfs_route_cache_get(routes, &other, &got), 0);
	/* no temporary file is left behind */
	DIR *d = opendir(routes);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			assert_non_null(strstr(de->d_name, ".route"));
			assert_null(strstr(de->d_name, ".tmp"));
			n++;
		}
	closedir(d);
	assert_int_equal(n, 1);
}

static void test_corrupt_ignored(void **state)
{
	(void)state;
	char path[600];
	mfs_route_key k = key_of(3);
	mfs_route_entry e = { .device = "cpu", .cpu_ms = 1, .opencl_ms = -1, .note = "n" };
	mfs_route_entry got;
	mfs_error err;
	mfs_route_cache_file(dir, &k, path, sizeof(path));
	static const char *const bad[] = {
		"",                                                    /* empty */
		"garbage\n",                                           /* no magic */
		"modelfs-engine-choice 1\nkey model=0 config=0\ndevice cpu\ncpu_ms 1\nopencl_ms 1\n",   /* another key */
		"modelfs-engine-choice 1\n",                           /* truncated */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(path, bad[i]);
		assert_int_equal(mfs_route_cache_get(dir, &k, &got), 0);
	}
	/* the right key but a bad device or number */
	assert_int_equal(mfs_route_cache_put(dir, &k, &e, &err), 0);
	FILE *f = fopen(path, "r");
	char text[2048];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	char *dev = strstr(text, "device cpu");
	assert_non_null(dev);
	memcpy(dev, "device tpu", 10);
	write_file(path, text);
	assert_int_equal(mfs_route_cache_get(dir, &k, &got), 0);
	memcpy(dev, "device cpu", 10);
	char *ms = strstr(text, "cpu_ms ");
	ms[7] = 'x';
	write_file(path, text);
	assert_int_equal(mfs_route_cache_get(dir, &k, &got), 0);
	/* a new trial's entry replaces it */
	assert_int_equal(mfs_route_cache_put(dir, &k, &e, &err), 0);
	assert_int_equal(mfs_route_cache_get(dir, &k, &got), 1);
	assert_string_equal(got.device, "cpu");
	assert_true(got.opencl_ms == -1);
}

static void test_unwritable(void **state)
{
	(void)state;
	mfs_route_key k = key_of(4);
	mfs_route_entry e = { .device = "cpu" };
	mfs_error err;
	char file[300];
	snprintf(file, sizeof(file), "%s/plain", dir);
	write_file(file, "x");
	char sub[400];
	snprintf(sub, sizeof(sub), "%s/routes", file);   /* under a regular file */
	assert_true(mfs_route_cache_put(sub, &k, &e, &err) < 0);
	assert_non_null(strstr(err.msg, sub));
}

static void test_hashes(void **state)
{
	(void)state;
	char path[300];
	uint64_t h1, h2, h3;
	mfs_error err;
	snprintf(path, sizeof(path), "%s/model.onnx", dir);
	/* more than one read chunk, and a tail that is not a multiple of 32 */
	size_t n = (1u << 20) * 2 + 77;
	unsigned char *buf = malloc(n);
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)(i * 31 + 7);
	FILE *f = fopen(path, "wb");
	fwrite(buf, 1, n, f);
	fclose(f);
	assert_int_equal(mfs_route_hash_file(path, &h1, &err), 0);
	assert_true(h1 == mfs_route_hash_bytes(buf, n, 0));
	buf[n - 1] ^= 1;   /* one bit of the tail */
	f = fopen(path, "wb");
	fwrite(buf, 1, n, f);
	fclose(f);
	assert_int_equal(mfs_route_hash_file(path, &h2, &err), 0);
	assert_true(h1 != h2);
	buf[5] ^= 1;
	assert_true(mfs_route_hash_bytes(buf, n, 0) != h2);
	h3 = mfs_route_hash_bytes(buf, 10, 0);
	assert_true(h3 != mfs_route_hash_bytes(buf, 11, 0));
	free(buf);
	assert_true(mfs_route_hash_file("/nonexistent/model.onnx", &h3, &err) < 0);
}

static void test_config_hash(void **state)
{
	(void)state;
	mfs_model_config a, b;
	mfs_config_init(&a);
	mfs_config_init(&b);
	a.max_batch_size = 8;
	b.max_batch_size = 8;
	assert_true(mfs_route_hash_config(&a) == mfs_route_hash_config(&b));
	b.max_batch_size = 16;   /* a field that changes the run */
	assert_true(mfs_route_hash_config(&a) != mfs_route_hash_config(&b));
	mfs_config_release(&a);
	mfs_config_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_put_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unwritable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hashes, setup, teardown),
		cmocka_unit_test(test_config_hash),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
