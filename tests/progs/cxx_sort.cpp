// cxx_sort: CPU burnt in a costly comparator that std::sort calls:
//
//   main -> app::run_sort -> std::sort internals (std::__introsort_loop,
//        std::__insertion_sort, ...) -> app::CostlyLess::operator()
//
//   cxx_sort [--seconds N]
//
// The program's own callers (main, app::run_sort) sit above libstdc++'s
// template frames, which sit above the comparator: a profiler must show
// them in that order. "ready" is printed on stdout once sorting runs.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "progs.h"

static volatile std::uint64_t sink;

namespace app {

struct CostlyLess {
	// About a microsecond of hashing per comparison.
	NOINLINE bool operator()(std::uint64_t a, std::uint64_t b) const
	{
		std::uint64_t x = a, y = b;

		KEEP_FRAME();
		for (int i = 0; i < 300; i++) {
			x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull;
			y = (y ^ (y >> 29)) * 0xbf58476d1ce4e5b9ull;
		}
		sink += x ^ y;
		return a < b;
	}
};

using Iter = std::vector<std::uint64_t>::iterator;

// std::sort called through a pointer the compiler cannot see through:
// inlined into run_sort, its final insertion sort would call the
// comparator straight from run_sort, with no library frame in between.
static void (*volatile sort_fn)(Iter, Iter, CostlyLess) = std::sort<Iter, CostlyLess>;

NOINLINE void run_sort(std::vector<std::uint64_t> &v, std::uint64_t &rng)
{
	KEEP_FRAME();
	for (auto &e : v) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		e = rng;
	}
	sort_fn(v.begin(), v.end(), CostlyLess());
	sink += v[0];
}

} // namespace app

int main(int argc, char **argv)
{
	double seconds = 5;

	for (int i = 1; i < argc; i++) {
		if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = std::atof(argv[++i]);
		} else {
			std::fprintf(stderr, "usage: cxx_sort [--seconds N]\n");
			return 2;
		}
	}
	// One sort is the chunk of work.h, repeated until the time is up.
	std::vector<std::uint64_t> v(work_chunk(4096));
	std::uint64_t rng = 0x9e3779b97f4a7c15ull;
	auto end = std::chrono::steady_clock::now() +
		   std::chrono::duration<double>(seconds);

	std::printf("ready\n");
	std::fflush(stdout);
	do
		app::run_sort(v, rng);
	while (std::chrono::steady_clock::now() < end);
	return 0;
}
