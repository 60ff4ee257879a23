/* config_schema_sequence.c - sequence_batching (config_schema.c's
 * table): Triton's ModelSequenceBatching as modelfs serves it (the
 * sequence batcher is src/core/sequence_batcher.h): the direct and oldest
 * strategies, max_sequence_idle_microseconds, control_input and implicit
 * state; Triton's rules between these fields; the message rendered back
 * as Triton prints it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config_fields.h"

#define SB(c) (&(c)->sequence_batching)

/* ---- strategies: direct { max_queue_delay_microseconds }
 *      oldest { max_candidate_sequences preferred_batch_size
 *               max_queue_delay_microseconds } ---- */

static int st_delay(cfg_conv *cv, const cfg_node *n, void *obj)
{
	/* An hour, as dynamic_batching's. */
	return cfg_get_i64(cv, n, 0, 3600000000LL, &SB((mfs_model_config *)obj)->max_queue_delay_us);
}

static int st_candidates(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_int(cv, n, 0, 1 << 20, &SB((mfs_model_config *)obj)->max_candidate_sequences);
}

static int st_preferred(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	return cfg_preferred_batch_size(cv, n, &SB(c)->preferred_batch_size,
					&SB(c)->n_preferred_batch_size);
}

static int sb_strategy(cfg_conv *cv, const cfg_node *n, mfs_model_config *c, bool oldest)
{
	static const cfg_field_def direct[] = {
		{ "max_queue_delay_microseconds", false, st_delay },
	};
	static const cfg_field_def old[] = {
		{ "max_candidate_sequences", false, st_candidates },
		{ "preferred_batch_size", true, st_preferred },
		{ "max_queue_delay_microseconds", false, st_delay },
	};
	static const char *const direct_triton[] = { "minimum_slot_utilization", NULL };
	static const char *const old_triton[] = { "preserve_ordering", NULL };

	for (int i = 0; i < n->parent->n_children; i++) {
		const char *other = n->parent->children[i].name;
		if (&n->parent->children[i] != n &&
		    (strcmp(other, "direct") == 0 || strcmp(other, "oldest") == 0))
			return cfg_fail_at(cv, n, "sequence_batching takes one strategy: direct or oldest");
	}
	SB(c)->oldest = oldest;
	if (oldest)
		return cfg_conv_message(cv, n, "oldest", old, N_OF(old), old_triton, c);
	return cfg_conv_message(cv, n, "direct", direct, N_OF(direct), direct_triton, c);
}

static int sb_direct(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return sb_strategy(cv, n, obj, false);
}

static int sb_oldest(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return sb_strategy(cv, n, obj, true);
}

static int sb_idle(cfg_conv *cv, const cfg_node *n, void *obj)
{
	/* About 11 days, as the queue timeouts: ns arithmetic stays safe. */
	return cfg_get_i64(cv, n, 0, MFS_MAX_QUEUE_TIMEOUT_US, &SB((mfs_model_config *)obj)->max_idle_us);
}

/* ---- control_input [{ name control [{ kind int32_false_true
 *      fp32_false_true bool_false_true data_type }] }] ---- */

/* A control while it is read: which *_false_true lists were given. */
typedef struct ctrl_read {
	mfs_seq_control *ctl;
	int n_values;                /* values of the list given */
	int lists;                   /* how many of the three lists */
	const char *list;            /* the last list's name */
	bool has_kind, has_type;
} ctrl_read;

static int ct_kind(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_enum_def kinds[] = {
		{ "CONTROL_SEQUENCE_START", 0 }, { "CONTROL_SEQUENCE_READY", 1 },
		{ "CONTROL_SEQUENCE_END", 2 }, { "CONTROL_SEQUENCE_CORRID", 3 },
	};
	ctrl_read *cr = obj;
	int v = 0;

	if (cfg_get_enum(cv, n, kinds, N_OF(kinds), &v))
		return -EINVAL;
	cr->ctl->kind = (mfs_seq_control_kind)v;
	cr->has_kind = true;
	return 0;
}

/* One value of int32_false_true, fp32_false_true or bool_false_true. */
static int ct_value(cfg_conv *cv, const cfg_node *n, ctrl_read *cr, mfs_dtype dt)
{
	double v = 0;

	if (cr->list && strcmp(cr->list, n->name) != 0)
		cr->lists++, cr->n_values = 0;
	else if (!cr->list)
		cr->lists = 1;
	cr->list = n->name;
	if (dt == MFS_DT_BOOL) {
		bool b = false;
		if (cfg_get_bool(cv, n, &b))
			return -EINVAL;
		v = b;
	} else if (dt == MFS_DT_INT32) {
		int64_t i;
		if (cfg_get_i64(cv, n, INT32_MIN, INT32_MAX, &i))
			return -EINVAL;
		v = (double)i;
	} else {
		char *end = NULL;
		if (n->kind == CFG_NUMBER || (cv->json && n->kind == CFG_STRING))
			v = strtod(n->text, &end);
		if (!end || end == n->text || *end || !isfinite(v))
			return cfg_fail_at(cv, n, "field '%s' must be a number", n->name);
	}
	if (cr->n_values >= 2)
		return cfg_fail_at(cv, n, "%s must have two entries: the false value, then the true value",
				   n->name);
	cr->ctl->false_true[cr->n_values++] = v;
	cr->ctl->dtype = dt;
	return 0;
}

static int ct_int32(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return ct_value(cv, n, obj, MFS_DT_INT32);
}

static int ct_fp32(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return ct_value(cv, n, obj, MFS_DT_FLOAT);
}

static int ct_bool(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return ct_value(cv, n, obj, MFS_DT_BOOL);
}

static int ct_data_type(cfg_conv *cv, const cfg_node *n, void *obj)
{
	ctrl_read *cr = obj;
	mfs_dtype dt = MFS_DT_UNDEFINED;

	if (cfg_get_data_type(cv, n, &dt))
		return -EINVAL;
	if (dt == MFS_DT_UNDEFINED)
		return 0;
	if (dt != MFS_DT_UINT64 && dt != MFS_DT_INT64 && dt != MFS_DT_UINT32 && dt != MFS_DT_INT32)
		return cfg_fail_at(cv, n, "control data_type must be TYPE_UINT64, TYPE_INT64, TYPE_UINT32 or TYPE_INT32");
	cr->ctl->dtype = dt;
	cr->has_type = true;
	return 0;
}

/* The rules of one control, once read (Triton's). */
static int check_control(cfg_conv *cv, const cfg_node *n, const ctrl_read *cr)
{
	const char *name = cr->ctl->name;
	bool corrid = cr->ctl->kind == MFS_SEQ_CTRL_CORRID;
	bool has_type = cr->has_type;

	if (!cr->has_kind)
		return cfg_fail_at(cv, n, "control_input '%s': control without a kind", name);
	if (corrid && !has_type)
		return cfg_fail_at(cv, n, "control_input '%s': CONTROL_SEQUENCE_CORRID needs data_type "
				   "(TYPE_UINT64, TYPE_INT64, TYPE_UINT32 or TYPE_INT32)", name);
	if (corrid && cr->lists)
		return cfg_fail_at(cv, n, "control_input '%s': CONTROL_SEQUENCE_CORRID takes data_type, "
				   "not a *_false_true list", name);
	if (!corrid && has_type)
		return cfg_fail_at(cv, n, "control_input '%s': data_type is for CONTROL_SEQUENCE_CORRID; "
				   "this control takes int32_false_true, fp32_false_true or bool_false_true", name);
	if (!corrid && cr->lists != 1)
		return cfg_fail_at(cv, n, "control_input '%s': give exactly one of int32_false_true, "
				   "fp32_false_true or bool_false_true", name);
	if (!corrid && cr->n_values != 2)
		return cfg_fail_at(cv, n, "control_input '%s': %s must have two entries: the false value, "
				   "then the true value", name, cr->list);
	return 0;
}

static int ci_control(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = {
		{ "kind", false, ct_kind },
		{ "int32_false_true", true, ct_int32 },
		{ "fp32_false_true", true, ct_fp32 },
		{ "bool_false_true", true, ct_bool },
		{ "data_type", false, ct_data_type },
	};
	mfs_seq_control *ctl = obj;
	ctrl_read cr = { .ctl = ctl };
	int rc;

	/* One control per input: a tensor carries one value per row. */
	if (ctl->dtype != MFS_DT_UNDEFINED || n->index > 0)
		return cfg_fail_at(cv, n, "control_input '%s': one control per control_input "
				   "(give each control its own input)", ctl->name ? ctl->name : "?");
	ctl->dtype = MFS_DT_UNDEFINED;
	rc = cfg_conv_message(cv, n, "control", defs, N_OF(defs), NULL, &cr);
	if (rc == 0)
		rc = check_control(cv, n, &cr);
	return rc;
}

static int ci_name(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_string(cv, n, &((mfs_seq_control *)obj)->name);
}

static int sb_control_input(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = {
		{ "name", false, ci_name }, { "control", true, ci_control },
	};
	mfs_model_config *c = obj;
	mfs_seq_control *grown, *ctl;
	int rc;

	if (SB(c)->n_controls >= 64)
		return cfg_fail_at(cv, n, "too many control_input entries");
	grown = realloc(SB(c)->controls, (size_t)(SB(c)->n_controls + 1) * sizeof(*grown));
	if (!grown)
		return cfg_no_memory(cv);
	SB(c)->controls = grown;
	ctl = &grown[SB(c)->n_controls++];
	memset(ctl, 0, sizeof(*ctl));
	/* The name first, so that messages about the control name it. */
	for (int i = 0; i < n->n_children; i++)
		if (strcmp(n->children[i].name, "name") == 0 &&
		    (rc = ci_name(cv, &n->children[i], ctl)) < 0)
			return rc;
	if (!ctl->name)
		return cfg_fail_at(cv, n, "control_input without a name");
	rc = cfg_conv_message(cv, n, "control_input", defs, N_OF(defs), NULL, ctl);
	if (rc)
		return rc;
	if (ctl->dtype == MFS_DT_UNDEFINED)
		return cfg_fail_at(cv, n, "control_input '%s' without a control", ctl->name);
	return 0;
}

/* ---- state [{ input_name output_name data_type dims
 *      initial_state [{ data_type dims zero_data | data_file name }] }] ---- */

static int dims_add(cfg_conv *cv, const cfg_node *n, int *rank, int64_t *dims, int64_t lo)
{
	int64_t v;

	if (cfg_get_i64(cv, n, lo, INT64_MAX, &v))
		return -EINVAL;
	if (v == 0 && lo < 0)
		return cfg_fail_at(cv, n, "state dims: a dim is -1 (variable) or at least 1");
	if (*rank < 0)
		*rank = 0;
	if (*rank == MFS_MAX_RANK)
		return cfg_fail_at(cv, n, "dims: more than %d dims", MFS_MAX_RANK);
	dims[(*rank)++] = v;
	return 0;
}

static int is_data_type(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_data_type(cv, n, &((mfs_seq_state *)obj)->init_dtype);
}

static int is_dims(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_seq_state *s = obj;
	return dims_add(cv, n, &s->init_rank, s->init_dims, 1);
}

static int is_zero(cfg_conv *cv, const cfg_node *n, void *obj)
{
	bool ignored;   /* Triton: "the value of 'zero_data' will not be checked" */
	(void)obj;
	return cfg_get_bool(cv, n, &ignored);
}

static int is_file(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_seq_state *s = obj;

	if (cfg_get_string(cv, n, &s->init_file))
		return -EINVAL;
	if (s->init_file && (strchr(s->init_file, '/') || strcmp(s->init_file, "..") == 0 ||
			     strcmp(s->init_file, ".") == 0))
		return cfg_fail_at(cv, n, "initial_state data_file '%s' must be a file name in the "
				   "model's initial_state/ directory (no '/')", s->init_file);
	return 0;
}

static int is_name(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_string(cv, n, &((mfs_seq_state *)obj)->init_name);
}

static int s_initial(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = {
		{ "data_type", false, is_data_type }, { "dims", true, is_dims },
		{ "zero_data", false, is_zero }, { "data_file", false, is_file },
		{ "name", false, is_name },
	};
	mfs_seq_state *s = obj;
	bool zero = false, file = false;

	if (s->has_initial)
		return cfg_fail_at(cv, n, "state '%s': one initial_state per state",
				   s->input_name ? s->input_name : "?");
	s->has_initial = true;
	s->init_rank = 0;
	for (int i = 0; i < n->n_children; i++) {
		zero |= strcmp(n->children[i].name, "zero_data") == 0;
		file |= strcmp(n->children[i].name, "data_file") == 0;
	}
	if (zero == file)
		return cfg_fail_at(cv, n, "initial_state takes one of zero_data or data_file");
	return cfg_conv_message(cv, n, "initial_state", defs, N_OF(defs), NULL, s);
}

static int s_input_name(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_string(cv, n, &((mfs_seq_state *)obj)->input_name);
}

static int s_output_name(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_string(cv, n, &((mfs_seq_state *)obj)->output_name);
}

static int s_data_type(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_data_type(cv, n, &((mfs_seq_state *)obj)->dtype);
}

static int s_dims(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_seq_state *s = obj;
	return dims_add(cv, n, &s->rank, s->dims, -1);
}

/* Triton's rules of one state. */
static int check_state(cfg_conv *cv, const cfg_node *n, const mfs_seq_state *s)
{
	if (!s->input_name || !s->output_name)
		return cfg_fail_at(cv, n, "state needs input_name and output_name");
	if (s->dtype == MFS_DT_UNDEFINED)
		return cfg_fail_at(cv, n, "state '%s' needs data_type", s->input_name);
	if (s->rank < 0)
		return cfg_fail_at(cv, n, "state '%s' needs dims", s->input_name);
	if (!s->has_initial) {
		for (int d = 0; d < s->rank; d++)
			if (s->dims[d] < 0)
				return cfg_fail_at(cv, n, "state '%s' has a variable dim: give initial_state "
						   "with its dims", s->input_name);
		return 0;
	}
	if (s->init_dtype != s->dtype)
		return cfg_fail_at(cv, n, "state '%s': initial_state data_type must be the state's",
				   s->input_name);
	if (s->init_rank != s->rank)
		return cfg_fail_at(cv, n, "state '%s': initial_state dims must have the state's rank (%d)",
				   s->input_name, s->rank);
	for (int d = 0; d < s->rank; d++)
		if (s->dims[d] >= 0 && s->dims[d] != s->init_dims[d])
			return cfg_fail_at(cv, n, "state '%s': initial_state dim %d is %lld, the state's is %lld",
					   s->input_name, d, (long long)s->init_dims[d], (long long)s->dims[d]);
	return 0;
}

static int sb_state(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = {
		{ "input_name", false, s_input_name }, { "output_name", false, s_output_name },
		{ "data_type", false, s_data_type }, { "dims", true, s_dims },
		{ "initial_state", true, s_initial },
	};
	static const char *const triton[] = {
		"use_same_buffer_for_input_output", "use_growable_memory", NULL,
	};
	mfs_model_config *c = obj;
	mfs_seq_state *grown, *s;
	int rc;

	if (SB(c)->n_states >= 64)
		return cfg_fail_at(cv, n, "too many state entries");
	grown = realloc(SB(c)->states, (size_t)(SB(c)->n_states + 1) * sizeof(*grown));
	if (!grown)
		return cfg_no_memory(cv);
	SB(c)->states = grown;
	s = &grown[SB(c)->n_states++];
	memset(s, 0, sizeof(*s));
	s->rank = -1;
	rc = cfg_conv_message(cv, n, "state", defs, N_OF(defs), triton, s);
	return rc ? rc : check_state(cv, n, s);
}

int cfg_sequence_batching(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = {
		{ "direct", false, sb_direct },
		{ "oldest", false, sb_oldest },
		{ "max_sequence_idle_microseconds", false, sb_idle },
		{ "control_input", true, sb_control_input },
		{ "state", true, sb_state },
	};
	static const char *const triton[] = { "iterative_sequence", NULL };
	mfs_model_config *c = obj;

	c->has_sequence_batching = true;
	return cfg_conv_message(cv, n, "sequence_batching", defs, N_OF(defs), triton, obj);
}

/* Is name one of the names the batcher owns, other than skip? */
static const char *owner_of(const mfs_model_config *c, const char *name, const void *skip)
{
	for (int i = 0; i < SB(c)->n_controls; i++)
		if (&SB(c)->controls[i] != skip && strcmp(SB(c)->controls[i].name, name) == 0)
			return "a control_input";
	for (int i = 0; i < SB(c)->n_states; i++)
		if (&SB(c)->states[i] != skip && strcmp(SB(c)->states[i].input_name, name) == 0)
			return "a state's input_name";
	return NULL;
}

int cfg_check_sequence(cfg_conv *cv, const cfg_node *root, mfs_model_config *c)
{
	const char *other;

	if (!c->has_sequence_batching)
		return 0;
	if (c->has_dynamic_batching)
		return cfg_fail_at(cv, root, "a model takes dynamic_batching or sequence_batching, not both");
	if (c->n_steps || (c->platform && strcmp(c->platform, "ensemble") == 0))
		return cfg_fail_at(cv, root, "sequence_batching is for a model, not an ensemble");
	if (c->n_warmups)
		return cfg_fail_at(cv, root, "model_warmup with sequence_batching is not supported "
				   "(a sample would need the control and state inputs the batcher fills)");
	if (SB(c)->oldest && SB(c)->max_candidate_sequences == 0)
		SB(c)->max_candidate_sequences = c->max_batch_size > 0 ? c->max_batch_size : 1;
	for (int i = 0; i < SB(c)->n_preferred_batch_size; i++)
		if (SB(c)->preferred_batch_size[i] > (c->max_batch_size > 0 ? c->max_batch_size : 1))
			return cfg_fail_at(cv, root, "sequence_batching: preferred_batch_size %d exceeds "
					   "max_batch_size %d", SB(c)->preferred_batch_size[i], c->max_batch_size);
	for (int i = 0; i < SB(c)->n_controls; i++)
		if ((other = owner_of(c, SB(c)->controls[i].name, &SB(c)->controls[i])))
			return cfg_fail_at(cv, root, "sequence_batching: control_input '%s' is also %s",
					   SB(c)->controls[i].name, other);
	for (int i = 0; i < SB(c)->n_states; i++) {
		const mfs_seq_state *s = &SB(c)->states[i];
		if ((other = owner_of(c, s->input_name, s)))
			return cfg_fail_at(cv, root, "sequence_batching: state input_name '%s' is also %s",
					   s->input_name, other);
		for (int k = 0; k < i; k++)
			if (strcmp(SB(c)->states[k].output_name, s->output_name) == 0)
				return cfg_fail_at(cv, root, "sequence_batching: state output_name '%s' given twice",
						   s->output_name);
	}
	return 0;
}

bool mfs_config_seq_owns(const mfs_model_config *c, const char *name, bool is_input)
{
	if (!c->has_sequence_batching)
		return false;
	if (is_input)
		return owner_of(c, name, NULL) != NULL;
	for (int i = 0; i < SB(c)->n_states; i++)
		if (strcmp(SB(c)->states[i].output_name, name) == 0)
			return true;
	return false;
}

/* ---- rendered as Triton prints it ---- */

static json_t *ints_json(const int64_t *v, int n)
{
	json_t *a = json_array();
	for (int i = 0; a && i < n; i++)
		json_array_append_new(a, json_integer(v[i]));
	return a;
}

static json_t *control_json(const mfs_seq_control *ctl)
{
	static const char *const kinds[] = {
		"CONTROL_SEQUENCE_START", "CONTROL_SEQUENCE_READY",
		"CONTROL_SEQUENCE_END", "CONTROL_SEQUENCE_CORRID",
	};
	json_t *o = json_object(), *c = json_object(), *a = json_array(), *list = json_array();

	json_object_set_new(c, "kind", json_string(kinds[ctl->kind]));
	if (ctl->kind == MFS_SEQ_CTRL_CORRID) {
		json_decref(list);
		json_object_set_new(c, "data_type", json_string(mfs_dtype_config_name(ctl->dtype)));
	} else {
		for (int i = 0; list && i < 2; i++)
			json_array_append_new(list, ctl->dtype == MFS_DT_BOOL ? json_boolean(ctl->false_true[i] != 0)
						    : ctl->dtype == MFS_DT_INT32 ? json_integer((json_int_t)ctl->false_true[i])
						    : json_real(ctl->false_true[i]));
		json_object_set_new(c, ctl->dtype == MFS_DT_BOOL ? "bool_false_true" :
				    ctl->dtype == MFS_DT_INT32 ? "int32_false_true" : "fp32_false_true", list);
	}
	json_array_append_new(a, c);
	json_object_set_new(o, "name", json_string(ctl->name));
	json_object_set_new(o, "control", a);
	return o;
}

static json_t *state_json(const mfs_seq_state *s)
{
	json_t *o = json_object();

	json_object_set_new(o, "input_name", json_string(s->input_name));
	json_object_set_new(o, "output_name", json_string(s->output_name));
	json_object_set_new(o, "data_type", json_string(mfs_dtype_config_name(s->dtype)));
	json_object_set_new(o, "dims", ints_json(s->dims, s->rank));
	if (s->has_initial) {
		json_t *i = json_object(), *a = json_array();
		json_object_set_new(i, "data_type", json_string(mfs_dtype_config_name(s->init_dtype)));
		json_object_set_new(i, "dims", ints_json(s->init_dims, s->init_rank));
		if (s->init_file)
			json_object_set_new(i, "data_file", json_string(s->init_file));
		else
			json_object_set_new(i, "zero_data", json_true());
		if (s->init_name)
			json_object_set_new(i, "name", json_string(s->init_name));
		json_array_append_new(a, i);
		json_object_set_new(o, "initial_state", a);
	}
	return o;
}

json_t *mfs_config_sequence_json(const mfs_model_config *c)
{
	json_t *o = json_object(), *st = json_object(), *a;

	if (!o) {
		json_decref(st);
		return NULL;
	}
	json_object_set_new(st, "max_queue_delay_microseconds", json_integer(SB(c)->max_queue_delay_us));
	if (SB(c)->oldest) {
		json_object_set_new(st, "max_candidate_sequences", json_integer(SB(c)->max_candidate_sequences));
		a = json_array();
		for (int i = 0; a && i < SB(c)->n_preferred_batch_size; i++)
			json_array_append_new(a, json_integer(SB(c)->preferred_batch_size[i]));
		json_object_set_new(st, "preferred_batch_size", a);
	}
	json_object_set_new(o, SB(c)->oldest ? "oldest" : "direct", st);
	json_object_set_new(o, "max_sequence_idle_microseconds",
			    json_integer(SB(c)->max_idle_us ? SB(c)->max_idle_us : MFS_SEQ_DEFAULT_IDLE_US));
	a = json_array();
	for (int i = 0; a && i < SB(c)->n_controls; i++)
		json_array_append_new(a, control_json(&SB(c)->controls[i]));
	json_object_set_new(o, "control_input", a);
	a = json_array();
	for (int i = 0; a && i < SB(c)->n_states; i++)
		json_array_append_new(a, state_json(&SB(c)->states[i]));
	json_object_set_new(o, "state", a);
	return o;
}
