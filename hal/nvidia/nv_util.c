/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small pure pieces of the preload library, kept apart so that tests link
 * them without interposing anything: the .entry names of a PTX module, the
 * kernels.txt line, the kernel filter, which versioned entry point a
 * cuGetProcAddress request means, and a GPU's system-wide id.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nv_util.h"

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$' || c == '.' || c == '%';
}

static int push(char ***v, size_t *n, const char *s, size_t len)
{
	char **t = realloc(*v, (*n + 1) * sizeof(**v));

	if (!t)
		return -ENOMEM;
	*v = t;
	t[*n] = strndup(s, len);
	if (!t[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

int nv_ptx_entries(const char *ptx, size_t len, char ***names, size_t *cnt)
{
	const char *p = ptx, *end = ptx + len;
	int e = 0;

	*names = NULL;
	*cnt = 0;
	while (p < end && !e) {
		if (p + 1 < end && p[0] == '/' && p[1] == '/') {
			while (p < end && *p != '\n')
				p++;
			continue;
		}
		if (p + 1 < end && p[0] == '/' && p[1] == '*') {
			const char *q = p + 2;

			while (q + 1 < end && !(q[0] == '*' && q[1] == '/'))
				q++;
			p = q + 2 <= end ? q + 2 : end;
			continue;
		}
		if (*p == '"') {	/* strings (e.g. in .file) never hold directives */
			p++;
			while (p < end && *p != '"' && *p != '\n')
				p++;
			p++;
			continue;
		}
		/* ".entry" as a whole token: preceded by a non-name char, followed by space. */
		if (*p == '.' && end - p > 7 && !strncmp(p, ".entry", 6) &&
		    (p[6] == ' ' || p[6] == '\t' || p[6] == '\n' || p[6] == '\r') &&
		    (p == ptx || !name_char(p[-1]))) {
			const char *q = p + 6, *s;

			while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
				q++;
			s = q;
			while (q < end && name_char(*q))
				q++;
			if (q > s)
				e = push(names, cnt, s, (size_t)(q - s));
			p = q;
			continue;
		}
		p++;
	}
	if (e)
		nv_free_names(*names, *cnt), *names = NULL, *cnt = 0;
	return e;
}

int nv_tagged_names(const char *text, const char *tag, char ***names, size_t *cnt)
{
	size_t tl = strlen(tag);
	const char *p = text;
	int e = 0;

	*names = NULL;
	*cnt = 0;
	/* a tag starts a line and a space follows it */
	while (!e && (p = strstr(p, tag))) {
		const char *q = p + tl;
		size_t n;

		if ((p != text && p[-1] != '\n') || *q != ' ') {
			p = q;
			continue;
		}
		q++;
		n = strcspn(q, "\n");
		if (n)
			e = push(names, cnt, q, n);
		p = q + n;
	}
	if (e)
		nv_free_names(*names, *cnt), *names = NULL, *cnt = 0;
	return e;
}

void nv_free_names(char **names, size_t cnt)
{
	for (size_t i = 0; i < cnt; i++)
		free(names[i]);
	free(names);
}

bool nv_filter_match(const char *glob, const char *name)
{
	return !glob || !glob[0] || fnmatch(glob, name, 0) == 0;
}

int nv_kernel_line(char *buf, size_t len, unsigned pid, uint64_t id, const char *status,
		   const char *name)
{
	char st[48];
	size_t i;

	/* The status is one field of at most 47 chars: no spaces in it. */
	for (i = 0; status[i] && i < sizeof(st) - 1; i++)
		st[i] = status[i] == ' ' || status[i] == '\n' || status[i] == '\t' ? '_' :
										      status[i];
	st[i] = '\0';
	return snprintf(buf, len, "%u %016llx %s %s\n", pid, (unsigned long long)id, st, name);
}

const struct nv_hook_ver *nv_pick_version(const struct nv_hook_ver *v, size_t n,
					  const char *base, int cuda_version, uint64_t flags)
{
	const struct nv_hook_ver *best = NULL;
	bool want_pt = flags & NV_PROC_PER_THREAD;
	bool have_pt = false;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].base, base) && v[i].per_thread)
			have_pt = true;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(v[i].base, base) || v[i].since > cuda_version)
			continue;
		if (have_pt && v[i].per_thread != want_pt)
			continue;
		if (!best || v[i].since > best->since)
			best = &v[i];
	}
	return best;
}

uint64_t nv_sync_gap_ns(uint64_t cost_ns, unsigned share_pct)
{
	uint64_t gap;

	if (!share_pct)
		return UINT64_MAX;
	/* a cost past 1.8e17 ns (5.8 years) would overflow x 100: no mirror for that long anyway */
	gap = cost_ns > UINT64_MAX / 100 ? UINT64_MAX : cost_ns * 100 / share_pct;
	return gap < 2000000ull ? 2000000ull : gap;
}

void nv_set_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* @n hex digits (at least @min, at most @max) at *@p; advances *@p. */
static bool hex_field(const char **p, unsigned min, unsigned max, uint64_t *v)
{
	unsigned n = 0;

	*v = 0;
	for (;; n++) {
		char c = (*p)[n];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			break;
		if (n == max)
			return false;
		*v = *v << 4 | d;
	}
	*p += n;
	return n >= min;
}

int nv_pci_addr(const char *s, uint64_t *addr)
{
	uint64_t dom, bus, dev, fn;
	const char *p = s;

	if (!hex_field(&p, 4, 8, &dom) || *p++ != ':' || !hex_field(&p, 2, 2, &bus) ||
	    *p++ != ':' || !hex_field(&p, 2, 2, &dev) || *p++ != '.' ||
	    !hex_field(&p, 1, 1, &fn) || *p || dev > 0x1f || fn > 7)
		return -EINVAL;
	*addr = dom << 16 | bus << 8 | dev << 3 | fn;
	return 0;
}

/* Appends "; "-separated text to @why (@size bytes, *@wl used so far; cut short when full). */
static void __attribute__((format(printf, 4, 5)))
add_why(char *why, size_t size, size_t *wl, const char *fmt, ...)
{
	va_list ap;

	if (*wl + 1 >= size)
		return;
	if (*wl) {
		*wl += (size_t)snprintf(why + *wl, size - *wl, "; ");
		if (*wl + 1 >= size) {
			*wl = size;
			return;
		}
	}
	va_start(ap, fmt);
	*wl += (size_t)vsnprintf(why + *wl, size - *wl, fmt, ap);
	va_end(ap);
	if (*wl >= size)
		*wl = size;
}

int nv_gpu_rank(const char *bus_id, const char *dirs, char *err, size_t len)
{
	char why[512] = "";
	size_t wl = 0;
	uint64_t own;

	if (nv_pci_addr(bus_id, &own)) {
		nv_set_err(err, len, "the driver gave '%s', not a PCI address", bus_id);
		return -EINVAL;
	}
	for (const char *d = dirs; d && *d;) {
		size_t n = strcspn(d, ":");
		char path[4096];
		struct dirent *e;
		unsigned below = 0, listed = 0;
		bool found = false;
		DIR *dir;

		snprintf(path, sizeof(path), "%.*s", (int)n, d);
		d += n + (d[n] == ':');
		if (!path[0])
			continue;
		dir = opendir(path);
		if (!dir) {
			add_why(why, sizeof(why), &wl, "%s: %s", path, strerror(errno));
			continue;
		}
		for (errno = 0; (e = readdir(dir)); errno = 0) {
			uint64_t a;

			if (nv_pci_addr(e->d_name, &a))
				continue;
			listed++;
			below += a < own;
			found |= a == own;
		}
		if (errno) {	/* a list read in part could give a wrong rank */
			int en = errno;

			closedir(dir);
			add_why(why, sizeof(why), &wl, "%s: %s", path, strerror(en));
			continue;
		}
		closedir(dir);
		if (found)
			return (int)below;
		add_why(why, sizeof(why), &wl, "%s lists %u GPUs, not it", path, listed);
	}
	nv_set_err(err, len, "GPU %s is in no list of the system's GPUs (%s)", bus_id,
		   why[0] ? why : "no directory given");
	return -ENOENT;
}
