/* demangle: C++ and Rust names made readable, and made simple.
 *
 * Demangling is libiberty's (the same code as c++filt): Itanium C++
 * (_Z...), Rust legacy (_ZN...17h<hash>E, the hash dropped) and Rust v0
 * (_R...).
 *
 * Simple names (SYM_SIMPLE, the CLI's -s) keep only what identifies the
 * function: no return type, namespaces, class qualifiers, template
 * arguments, parameter lists, cv-qualifiers or "[clone .cold]" suffixes.
 *   void foo::bar<int>(int)                         -> bar
 *   ns::Klass<std::vector<int> >::method(int) const -> method
 *   (anonymous namespace)::f()                      -> f
 *   std::ostream& operator<< <char>(std::ostream&)  -> operator<<
 * A name that is only meaningful with its enclosing scope -- a lambda's
 * or unnamed type's operator(), a Rust closure -- keeps the scopes back to
 * the nearest named one, themselves simplified:
 *   main::{lambda(int)#1}::operator()(int) const    -> main::{lambda(int)#1}::operator()
 *   std::rt::lang_start::{{closure}}                -> lang_start::{{closure}}
 */
#ifndef NPROF_SYMBOLIZE_DEMANGLE_H
#define NPROF_SYMBOLIZE_DEMANGLE_H

/* Longest name handled; longer ones are returned as they are. */
#define DEMANGLE_MAX_NAME (64 * 1024)

/* The demangled form of a mangled name, malloc'd, or NULL when name is
 * not mangled (a C name) or cannot be demangled. */
char *demangle(const char *name);

/* The simple form of a demangled name, malloc'd; NULL only when out of
 * memory. */
char *demangle_simplify(const char *demangled);

#endif
