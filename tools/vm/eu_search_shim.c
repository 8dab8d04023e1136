// SPDX-License-Identifier: GPL-2.0-only
/*
 * Linked into every static VM test binary. bookworm-backports' libelf.a
 * (elfutils 0.192) calls four search-tree functions that live in no static
 * archive Debian ships (the shared libelf has them), so `-static -lelf`
 * fails to link. These stand-ins implement the same calls on top of libc's
 * tsearch family. They rely only on the tree's root pointer being its first
 * member (elfutils' search_tree) and take no lock: the test programs use
 * libelf from one thread. Weak, so a libelf.a that has the real ones wins.
 */
#define _GNU_SOURCE
#include <search.h>
#include <stddef.h>

struct eu_tree_head {
	void *root;	/* first member of elfutils' search_tree */
};

typedef int (*eu_cmp_fn)(const void *, const void *);

void eu_search_tree_init(struct eu_tree_head *tree);
void eu_search_tree_fini(struct eu_tree_head *tree, void (*free_node)(void *));
void *eu_tsearch(const void *key, struct eu_tree_head *tree, eu_cmp_fn cmp);
void *eu_tdelete(const void *key, struct eu_tree_head *tree, eu_cmp_fn cmp);

__attribute__((weak)) void eu_search_tree_init(struct eu_tree_head *tree)
{
	tree->root = NULL;
}

__attribute__((weak)) void eu_search_tree_fini(struct eu_tree_head *tree,
					       void (*free_node)(void *))
{
	tdestroy(tree->root, free_node);
	tree->root = NULL;
}

__attribute__((weak)) void *eu_tsearch(const void *key, struct eu_tree_head *tree,
				       eu_cmp_fn cmp)
{
	return tsearch(key, &tree->root, cmp);
}

__attribute__((weak)) void *eu_tdelete(const void *key, struct eu_tree_head *tree,
				       eu_cmp_fn cmp)
{
	return tdelete(key, &tree->root, cmp);
}
