// cxx_alloc: allocations made in C++ frames whose full names differ from
// their simple ones, on two threads, for the thread-root and simple-name
// checks of tests/integration/agent_alloc.sh.
//
//   cxx_alloc [--seconds N]
//
// The main thread and a thread named "pool" each call, for N seconds of
// wall time (default 1), ns::Pool<int>::grow(unsigned long), which
// allocates and frees 64 KiB blocks (every 16th kept until the end). The
// pool thread ends before main does. With simple names the frame is
// "grow"; in full, "ns::Pool<int>::grow(unsigned long)".
#include <pthread.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "progs.h"

namespace ns {
template <typename T> struct Pool {
	std::vector<T *> kept;
	NOINLINE void grow(unsigned long n)
	{
		T *p = static_cast<T *>(std::malloc(n * sizeof(T)));

		std::memset(p, 1, n * sizeof(T));
		if (kept.size() < 4096 && (reinterpret_cast<uintptr_t>(p) >> 4) % 16 == 0)
			kept.push_back(p);
		else
			std::free(p);
	}
	~Pool()
	{
		for (T *p : kept)
			std::free(p);
	}
};
} // namespace ns

static void run(double seconds)
{
	ns::Pool<int> pool;
	auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);

	while (std::chrono::steady_clock::now() < end)
		pool.grow(16384);
}

int main(int argc, char **argv)
{
	double seconds = 1;

	for (int i = 1; i < argc; i++) {
		if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = std::atof(argv[++i]);
		} else {
			std::fprintf(stderr, "usage: cxx_alloc [--seconds N]\n");
			return 2;
		}
	}
	std::thread t([seconds] {
		pthread_setname_np(pthread_self(), "pool");
		run(seconds / 2);
	});
	run(seconds);
	t.join();
	return 0;
}
