/* pb_wire.c - see pb_wire.h. */
#include "pb_wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int pb_read_varint(pb_reader *r, uint64_t *v, const char **why)
{
	uint64_t x = 0;

	for (int i = 0; i < 10; i++) {
		if (r->p >= r->end) {
			*why = "truncated varint";
			return -1;
		}
		uint8_t b = *r->p++;
		/* The 10th byte holds bit 63 only; anything more overflows. */
		if (i == 9 && b > 1) {
			*why = "varint overflows 64 bits";
			return -1;
		}
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	*why = "varint longer than 10 bytes";
	return -1;
}

int pb_next(pb_reader *r, pb_field *f, const char **why)
{
	uint64_t tag, n;

	if (r->p >= r->end)
		return 0;
	if (pb_read_varint(r, &tag, why))
		return -1;
	if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) {
		*why = "invalid field number";
		return -1;
	}
	f->num = (uint32_t)(tag >> 3);
	f->wt = (int)(tag & 7);
	f->u = 0;
	f->data = NULL;
	f->len = 0;
	switch (f->wt) {
	case PB_WT_VARINT:
		return pb_read_varint(r, &f->u, why) ? -1 : 1;
	case PB_WT_I64:
		if (r->end - r->p < 8) {
			*why = "truncated 64-bit field";
			return -1;
		}
		f->u = pb_le64(r->p);
		r->p += 8;
		return 1;
	case PB_WT_I32:
		if (r->end - r->p < 4) {
			*why = "truncated 32-bit field";
			return -1;
		}
		f->u = pb_le32(r->p);
		r->p += 4;
		return 1;
	case PB_WT_LEN:
		if (pb_read_varint(r, &n, why))
			return -1;
		if (n > (uint64_t)(r->end - r->p)) {
			*why = "length-delimited field runs past the end of its message";
			return -1;
		}
		f->data = r->p;
		f->len = (size_t)n;
		r->p += n;
		return 1;
	case 3:
	case 4:
		*why = "group wire type (not used by ONNX)";
		return -1;
	default:
		*why = "invalid wire type";
		return -1;
	}
}

long long pb_count_varints(const uint8_t *data, size_t len, const char **why)
{
	long long n = 0;
	int run = 0;

	for (size_t i = 0; i < len; i++) {
		if (data[i] & 0x80) {
			if (++run >= 10) {
				*why = "varint longer than 10 bytes";
				return -1;
			}
		} else {
			if (run == 9 && data[i] > 1) {
				*why = "varint overflows 64 bits";
				return -1;
			}
			run = 0;
			n++;
		}
	}
	if (run) {
		*why = "truncated varint in packed field";
		return -1;
	}
	return n;
}

const char *pb_wire_type_name(int wt)
{
	switch (wt) {
	case PB_WT_VARINT: return "varint";
	case PB_WT_I64: return "64-bit";
	case PB_WT_LEN: return "length-delimited";
	case PB_WT_I32: return "32-bit";
	default: return "invalid";
	}
}

int pb_strdup(const uint8_t *data, size_t len, char **out)
{
	char *s;

	*out = NULL;
	if (len && memchr(data, 0, len))
		return -EINVAL;
	s = malloc(len + 1);
	if (!s)
		return -ENOMEM;
	if (len)
		memcpy(s, data, len);
	s[len] = '\0';
	*out = s;
	return 0;
}
