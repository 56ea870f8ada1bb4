// cxx_demangle: hot code in C++ frames whose names only read well demangled:
// a class template method in a namespace, a function template in a namespace,
// and a lambda. Each gets about a third of the CPU.
//
//   cxx_demangle [--seconds N]
//
// Frames a profiler should print (gcc's demangler):
//   ns::Worker<int>::churn(int)
//   double ns::heavy<double>(double, int)        (or without the return type)
//   ns::run_lambda(int)::{lambda(int)#1}::operator()(int) const
// and with simple names: churn, heavy, operator() (or similar), never a
// namespace, template argument list or parameter list.
// "ready" is printed on stdout once the hot loop runs.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "progs.h"

static volatile unsigned long sink;

namespace ns {

template <typename T>
struct Worker {
	T state;
	NOINLINE T churn(int rounds)
	{
		KEEP_FRAME();
		for (int i = 0; i < rounds; i++)
			state = state * 1103515245 + 12345 + (state >> 3);
		return state;
	}
};

template <typename T>
NOINLINE T heavy(T x, int rounds)
{
	KEEP_FRAME();
	for (int i = 0; i < rounds; i++)
		x = x * static_cast<T>(0.999999) + static_cast<T>(1.000001) / (x + 1);
	return x;
}

NOINLINE unsigned long run_lambda(int rounds)
{
	unsigned long acc = 1;
	auto mix = [&acc](int n) __attribute__((noinline, noipa)) {
		KEEP_FRAME();
		for (int i = 0; i < n; i++)
			acc = (acc ^ (acc << 7)) + (acc >> 11) + (unsigned long)i;
		return acc;
	};
	return mix(rounds);
}

} // namespace ns

NOINLINE static void cxx_loop(double seconds)
{
	using clock = std::chrono::steady_clock;
	auto end = clock::now() + std::chrono::duration<double>(seconds);
	ns::Worker<int> w{1};
	double d = 1.5;
	while (clock::now() < end) {
		sink += (unsigned long)w.churn(3000000);
		d = ns::heavy<double>(d, 600000);
		sink += ns::run_lambda(3000000);
	}
	sink += (unsigned long)d;
}

int main(int argc, char **argv)
{
	double seconds = 5;
	for (int i = 1; i < argc; i++) {
		if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = std::atof(argv[++i]);
		} else {
			std::fprintf(stderr, "usage: cxx_demangle [--seconds N]\n");
			return 2;
		}
	}
	std::printf("ready\n");
	std::fflush(stdout);
	cxx_loop(seconds);
	return 0;
}
