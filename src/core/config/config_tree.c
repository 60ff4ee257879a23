/* config_tree.c - the parse tree's nodes (config_tree.h): grown by the
 * front-ends, linked once, released as a whole. */
#include "config_tree.h"

#include <stdlib.h>
#include <string.h>

cfg_node *cfg_node_add(cfg_node *parent, const char *name, size_t name_len,
		       int line)
{
	cfg_node *n;

	if (parent->n_children == parent->cap_children) {
		int cap = parent->cap_children ? 2 * parent->cap_children : 4;
		cfg_node *c = realloc(parent->children, (size_t)cap * sizeof(*c));
		if (!c)
			return NULL;
		parent->children = c;
		parent->cap_children = cap;
	}
	n = &parent->children[parent->n_children];
	memset(n, 0, sizeof(*n));
	n->name = strndup(name, name_len);
	if (!n->name)
		return NULL;
	n->line = line;
	n->index = -1;
	n->kind = CFG_MESSAGE;
	parent->n_children++;
	return n;
}

void cfg_node_release(cfg_node *n)
{
	for (int i = 0; i < n->n_children; i++)
		cfg_node_release(&n->children[i]);
	free(n->children);
	free(n->name);
	free(n->text);
	memset(n, 0, sizeof(*n));
}

void cfg_node_link(cfg_node *n)
{
	for (int i = 0; i < n->n_children; i++) {
		n->children[i].parent = n;
		cfg_node_link(&n->children[i]);
	}
}
