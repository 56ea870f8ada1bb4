// cxx_demangle: hot code in C++ frames whose names only read well demangled:
// a class template method in a namespace, a function template in a namespace,
// and a lambda. Each gets a third of the CPU: in turn, each burns 1 ms of the
// thread's CPU time (CLOCK_THREAD_CPUTIME_ID), in chunks of its own kind of
// arithmetic (work.h), so the split holds on any CPU, however fast its
// multiplier or its divider.
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
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "progs.h"

static volatile unsigned long sink;

// The thread's CPU time, in ns, `us` microseconds from now.
static std::uint64_t cpu_deadline(int us)
{
	return work_clock_ns(CLOCK_THREAD_CPUTIME_ID) + (std::uint64_t)us * 1000u;
}

static bool cpu_before(std::uint64_t deadline)
{
	return work_clock_ns(CLOCK_THREAD_CPUTIME_ID) < deadline;
}

namespace ns {

template <typename T>
struct Worker {
	T state;
	// Churns for us microseconds of CPU.
	NOINLINE T churn(int us)
	{
		const std::uint64_t end = cpu_deadline(us), n = work_chunk(30000);

		KEEP_FRAME();
		do
			for (std::uint64_t i = 0; i < n; i++)
				state = state * 1103515245 + 12345 + (state >> 3);
		while (cpu_before(end));
		return state;
	}
};

template <typename T>
NOINLINE T heavy(T x, int us)
{
	const std::uint64_t end = cpu_deadline(us), n = work_chunk(6000);

	KEEP_FRAME();
	do
		for (std::uint64_t i = 0; i < n; i++)
			x = x * static_cast<T>(0.999999) + static_cast<T>(1.000001) / (x + 1);
	while (cpu_before(end));
	return x;
}

NOINLINE unsigned long run_lambda(int us)
{
	unsigned long acc = 1;
	auto mix = [&acc](int t) __attribute__((noinline, noipa)) {
		const std::uint64_t end = cpu_deadline(t), n = work_chunk(30000);

		KEEP_FRAME();
		do
			for (std::uint64_t i = 0; i < n; i++)
				acc = (acc ^ (acc << 7)) + (acc >> 11) + (unsigned long)i;
		while (cpu_before(end));
		return acc;
	};
	return mix(us);
}

} // namespace ns

NOINLINE static void cxx_loop(double seconds)
{
	using clock = std::chrono::steady_clock;
	auto end = clock::now() + std::chrono::duration<double>(seconds);
	ns::Worker<int> w{1};
	double d = 1.5;
	while (clock::now() < end) {
		sink += (unsigned long)w.churn(1000);
		d = ns::heavy<double>(d, 1000);
		sink += ns::run_lambda(1000);
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
