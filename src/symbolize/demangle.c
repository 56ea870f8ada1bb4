#include "symbolize/demangle.h"

#include <libiberty/demangle.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

char *demangle(const char *name)
{
	/* Only names that claim to be mangled go to the demangler: DMGL_AUTO
	 * would also "demangle" some plain C names in older styles. */
	if (!name || strlen(name) > DEMANGLE_MAX_NAME ||
	    !((name[0] == '_' && (name[1] == 'Z' || name[1] == 'R')) ||
	      (name[0] == '_' && name[1] == '_' && name[2] == 'Z')))
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}

static bool is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '$';
}

/* Symbolic operator names, longest first so "<<=" wins over "<<" and
 * "<". */
static const char *const ops[] = {
	"<=>", "->*", "<<=", ">>=", "()", "[]", "->", "<<", ">>", "<=", ">=",
	"==", "!=", "&&", "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=",
	"|=", "^=", ",", "+", "-", "*", "/", "%", "&", "|", "^", "~", "!",
	"=", "<", ">",
};

#define ANON_NS "(anonymous namespace)"

/* The length of the operator name at s[i] ("operator<<", "operator new[]",
 * "operator std::string"), or 0 when there is none. Treating it as one
 * unit keeps its '<', '(' and spaces from being read as brackets and
 * separators. */
static size_t operator_len(const char *s, size_t i, size_t n)
{
	size_t j = i + 8;

	if (n - i < 9 || memcmp(s + i, "operator", 8) ||
	    (i > 0 && is_ident(s[i - 1])) || is_ident(s[j]))
		return 0;
	if (s[j] == ' ' || s[j] == '"') {
		/* new, delete, a conversion's type or a literal suffix:
		 * everything up to the parameter list. */
		int depth = 0;

		for (; j < n; j++) {
			if (s[j] == '<')
				depth++;
			else if (s[j] == '>' && depth > 0)
				depth--;
			else if (s[j] == '(' && depth == 0)
				break;
		}
		return j - i;
	}
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		size_t l = strlen(ops[k]);

		if (n - j >= l && !memcmp(s + j, ops[k], l))
			return 8 + l;
	}
	return 0;
}

static bool is_anon_ns(const char *s, size_t i, size_t n)
{
	return n - i >= strlen(ANON_NS) && !memcmp(s + i, ANON_NS, strlen(ANON_NS));
}

static bool is_open(char c)
{
	return c == '(' || c == '<' || c == '[' || c == '{';
}

/* The end of the unit starting at s[i]: an operator name, the anonymous
 * namespace, a bracketed group with everything nested in it, or one
 * character. */
static size_t unit_end(const char *s, size_t i, size_t n)
{
	size_t l = operator_len(s, i, n);
	int depth = 0;

	if (l)
		return i + l;
	if (is_anon_ns(s, i, n))
		return i + strlen(ANON_NS);
	if (!is_open(s[i]))
		return i + 1;
	for (size_t j = i; j < n;) {
		char c = s[j];

		l = operator_len(s, j, n);
		if (l) {
			j += l;
			continue;
		}
		if (is_open(c))
			depth++;
		else if ((c == ')' || c == ']' || c == '}' ||
			  (c == '>' && !(j > 0 && s[j - 1] == '-'))) &&
			 --depth == 0)
			return j + 1;
		j++;
	}
	return n;
}

struct buf {
	char *p;
	size_t len;
};

static void put(struct buf *b, const char *s, size_t len)
{
	memcpy(b->p + b->len, s, len);
	b->len += len;
	b->p[b->len] = '\0';
}

/* Appends component s[i, e) without template arguments or parameter
 * lists; a brace group ("{lambda(int)#1}", "{{closure}}") is kept whole
 * because it has no other name. */
static void put_component(struct buf *b, const char *s, size_t i, size_t e)
{
	if (s[i] == '{') {
		put(b, s + i, e - i);
		return;
	}
	while (i < e) {
		size_t u = unit_end(s, i, e), l = operator_len(s, i, e);

		if (l && (s[i + 8] == ' ')) {
			/* a conversion: keep the type, drop its arguments */
			put(b, s + i, 9);
			put_component(b, s, i + 9, u);
		} else if (s[i] == ' ' && u < e && s[u] == '<') {
			/* "operator< <int>": the space only separates */
		} else if (l || (s[i] != '<' && s[i] != '(')) {
			put(b, s + i, u - i);
		}
		i = u;
	}
}

static bool is_braced(const char *s, size_t i, size_t e)
{
	return e > i && s[i] == '{';
}

static bool is_call_op(const char *s, size_t i, size_t e)
{
	return e - i == 10 && !memcmp(s + i, "operator()", 10);
}

#define MAX_COMPONENTS 256

char *demangle_simplify(const char *demangled)
{
	size_t n = strlen(demangled), i, name_start = 0, name_end;
	size_t cs[MAX_COMPONENTS], ce[MAX_COMPONENTS], nc = 0, first;
	const char *clone;
	struct buf b;

	if (n > DEMANGLE_MAX_NAME)
		return strdup(demangled);
	/* "foo() [clone .cold]" is a part of foo split off by the compiler. */
	clone = strstr(demangled, " [clone ");
	if (clone)
		n = (size_t)(clone - demangled);
	/* The name ends at the parameter list: the first top-level '(' group
	 * not followed by "::" (which would make it a function scope, as in
	 * "f()::Local::g()"). The last top-level space before it ends the
	 * return type. */
	name_end = n;
	for (i = 0; i < n;) {
		size_t u = unit_end(demangled, i, n);

		if (demangled[i] == '(' && !is_anon_ns(demangled, i, n) &&
		    !(n - u >= 2 && !memcmp(demangled + u, "::", 2))) {
			name_end = i;
			break;
		}
		if (demangled[i] == ' ' && !(u < n && demangled[u] == '<'))
			name_start = u;
		i = u;
	}
	if (name_start >= name_end)
		name_start = 0;
	/* Split the name at top-level "::". */
	cs[0] = name_start;
	for (i = name_start; i < name_end;) {
		size_t u = unit_end(demangled, i, name_end);

		if (u - i == 1 && demangled[i] == ':' && i + 1 < name_end &&
		    demangled[i + 1] == ':') {
			ce[nc++] = i;
			if (nc == MAX_COMPONENTS)
				return strdup(demangled);
			u = i + 2;
			cs[nc] = u;
		}
		i = u;
	}
	ce[nc++] = name_end;
	/* Rust prints generic arguments as a component of their own
	 * ("foo::<u8>"); they name nothing. */
	while (nc > 1 && demangled[cs[nc - 1]] == '<' &&
	       unit_end(demangled, cs[nc - 1], ce[nc - 1]) == ce[nc - 1])
		nc--;
	first = nc - 1;
	while (first > 0 &&
	       (is_braced(demangled, cs[first], ce[first]) ||
		(is_call_op(demangled, cs[first], ce[first]) &&
		 is_braced(demangled, cs[first - 1], ce[first - 1]))))
		first--;
	b.p = malloc(n + 1);
	if (!b.p)
		return NULL;
	b.len = 0;
	b.p[0] = '\0';
	for (i = first; i < nc; i++) {
		if (i > first)
			put(&b, "::", 2);
		put_component(&b, demangled, cs[i], ce[i]);
	}
	if (b.len == 0)
		put(&b, demangled, n);
	return b.p;
}
