/* pb_wire.h - a bounds-checked reader of the protobuf wire format.
 *
 * Only the wire layer: tags, varints, fixed 32/64-bit values and
 * length-delimited fields.  It knows no schema; onnx_reader.c and
 * onnx_tensor.c map field numbers to meaning.  Every read is checked
 * against the end of the buffer, so a truncated or hostile input yields
 * an error string, never an out-of-bounds access.  Groups (wire types 3
 * and 4, deprecated and never used by ONNX) are refused rather than
 * skipped, which keeps skipping non-recursive.
 */
#ifndef MFS_PB_WIRE_H
#define MFS_PB_WIRE_H

#include <stddef.h>
#include <stdint.h>

enum pb_wire_type {
	PB_WT_VARINT = 0,
	PB_WT_I64 = 1,
	PB_WT_LEN = 2,
	PB_WT_I32 = 5,
};

typedef struct pb_reader {
	const uint8_t *p;
	const uint8_t *end;
} pb_reader;

/* One field: its number and wire type, and either its scalar value
 * (VARINT, I64, I32: the raw bits in u) or its bytes (LEN). */
typedef struct pb_field {
	uint32_t num;
	int wt;
	uint64_t u;
	const uint8_t *data;
	size_t len;
} pb_field;

static inline pb_reader pb_reader_init(const void *buf, size_t len)
{
	pb_reader r = { (const uint8_t *)buf, (const uint8_t *)buf + len };
	return r;
}

/* Read the next field.  Returns 1 with *f filled, 0 at the end of the
 * buffer, -1 on malformed input with *why set to a static phrase
 * ("truncated varint", ...). */
int pb_next(pb_reader *r, pb_field *f, const char **why);

/* Read one varint from r (packed repeated fields).  0 or -1 (+ *why). */
int pb_read_varint(pb_reader *r, uint64_t *v, const char **why);

/* Number of varints in a packed field's bytes; -1 (+ *why) if the bytes
 * do not end on a varint boundary or a varint is longer than 10 bytes. */
long long pb_count_varints(const uint8_t *data, size_t len, const char **why);

static inline uint32_t pb_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t pb_le64(const uint8_t *p)
{
	return (uint64_t)pb_le32(p) | (uint64_t)pb_le32(p + 4) << 32;
}

/* Writing: the bytes of varint v (at most 10), and writing them at p
 * (returns the end). */
static inline size_t pb_varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline uint8_t *pb_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Copy a string field into a new NUL-terminated string.  Returns 0,
 * -EINVAL when the bytes contain a NUL (a name that would read as
 * something shorter), -ENOMEM. */
int pb_strdup(const uint8_t *data, size_t len, char **out);

/* Wire type name for messages ("varint", "64-bit", "length-delimited"...). */
const char *pb_wire_type_name(int wt);

#endif
