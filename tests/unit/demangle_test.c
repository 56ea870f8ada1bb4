/* demangle_test: C++ and Rust demangling, and the simple-name rules of
 * demangle.h, edge cases first (operators, lambdas, templates). */
#include <stdlib.h>

#include "symbolize/demangle.h"
#include "test.h"

static void full(const char *mangled, const char *want)
{
	char *got = demangle(mangled);

	CHECK_STR(got, want, "demangle %s", mangled);
	free(got);
}

static void simple(const char *demangled, const char *want)
{
	char *got = demangle_simplify(demangled);

	CHECK_STR(got, want, "simplify \"%s\"", demangled);
	free(got);
}

int main(void)
{
	char *none;

	full("_ZN3foo3barIiEEvi", "void foo::bar<int>(int)");
	full("_ZNK2ns5KlassISt6vectorIiSaIiEEE6methodEi",
	     "ns::Klass<std::vector<int, std::allocator<int> > >::method(int) const");
	full("_ZZ4mainENKUliE_clEi", "main::{lambda(int)#1}::operator()(int) const");
	full("_ZN12_GLOBAL__N_11fEv", "(anonymous namespace)::f()");
	full("_Z3foov.cold", "foo() [clone .cold]");
	/* Rust legacy: the hash is dropped. */
	full("_ZN4core3ptr13drop_in_place17h1234567890abcdefE", "core::ptr::drop_in_place");
	full("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0123456789abcdefE",
	     "std::rt::lang_start::{{closure}}");
	/* Rust v0. */
	full("_RNvCs1234_7mycrate3foo", "mycrate::foo");
	none = demangle("main");
	CHECK(none == NULL, "a C name is not demangled");
	none = demangle("_Zgarbage!");
	CHECK(none == NULL, "garbage is not demangled");
	CHECK(demangle(NULL) == NULL, "NULL in, NULL out");

	simple("void foo::bar<int>(int)", "bar");
	simple("ns::Klass<std::vector<int, std::allocator<int> > >::method(int) const",
	       "method");
	simple("(anonymous namespace)::f()", "f");
	simple("(anonymous namespace)::Klass::g(int) const", "g");
	simple("main::{lambda(int)#1}::operator()(int) const",
	       "main::{lambda(int)#1}::operator()");
	simple("ns::Outer<int>::run()::{lambda()#2}::operator()() const",
	       "run::{lambda()#2}::operator()");
	simple("std::rt::lang_start::{{closure}}", "lang_start::{{closure}}");
	simple("core::ptr::drop_in_place", "drop_in_place");
	simple("<alloc::vec::Vec<u8> as core::ops::drop::Drop>::drop", "drop");
	simple("core::ptr::drop_in_place::<alloc::vec::Vec<u8>>", "drop_in_place");
	simple("foo() [clone .cold]", "foo");
	simple("ns::foo(int) [clone .isra.0] [clone .cold]", "foo");
	simple("A::f()::B::g()", "g");
	simple("int ns::foo<int>(int)", "foo");
	simple("std::vector<int, std::allocator<int> > ns::make<int>(unsigned long)", "make");
	simple("void foo<std::pair<int, int> >(std::pair<int, int> const&)", "foo");
	/* Operators keep their name: '<', '(' and spaces inside are theirs. */
	simple("operator<(A const&, A const&)", "operator<");
	simple("operator<<(std::ostream&, A const&)", "operator<<");
	simple("std::ostream& operator<< <char>(std::ostream&, A const&)", "operator<<");
	simple("bool A::operator< <int>(int)", "operator<");
	simple("A::operator()()", "operator()");
	simple("void Foo::operator()<int>(int) const", "operator()");
	simple("A::operator<=>(A const&)", "operator<=>");
	simple("A::operator<=(A const&)", "operator<=");
	simple("A::operator->()", "operator->");
	simple("A::operator>>=(int)", "operator>>=");
	simple("A::operator[](int)", "operator[]");
	simple("A::operator new(unsigned long)", "operator new");
	simple("A::operator delete[](void*)", "operator delete[]");
	simple("A::operator int()", "operator int");
	simple("A::operator std::vector<int, std::allocator<int> >() const",
	       "operator std::vector");
	simple("std::less<int>::operator()(int const&, int const&) const", "operator()");
	simple("std::_Rb_tree<int, std::pair<int const, int>, std::_Select1st<std::pair<int const, int> >, "
	       "std::less<int>, std::allocator<std::pair<int const, int> > >::_M_erase("
	       "std::_Rb_tree_node<std::pair<int const, int> >*)", "_M_erase");
	simple("void call<void (*)(int)>(void (*)(int))", "call");
	/* Not demangled names pass through. */
	simple("plain_c_function", "plain_c_function");
	simple("", "");
	/* Nothing left to show: the input is kept rather than "". */
	simple("::", "::");
	simple("a::", "a::");
	simple("(((", "(((");
	return test_done();
}
