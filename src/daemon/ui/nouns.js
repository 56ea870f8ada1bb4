// The nouns the page offers: profiling modes, download formats, worker
// actions, instance states, what each stored format converts to. Kept
// here, in one place, so that they can come from nprofd's API one day
// without touching the views. Pure data: no DOM.

// Modes and what each records, shown on hover (title) and beside the select.
export const MODES = {
	'cpu': 'CPU time: samples threads while they run on a CPU (perf_events cpu-clock). Where the CPU goes.',
	'itimer': 'CPU time through setitimer signals (ITIMER_PROF), for hosts where perf_events is denied. Coarser; needs no perf access.',
	'wall': 'Wall-clock time of every thread, running, waiting for a CPU or blocked (sleeping, waiting on I/O or locks), each stack ending in its state. Through the agent when loaded; without it, from the scheduler (admins: it needs root).',
	'offcpu': 'Off-CPU time: where threads wait (blocked, sleeping, preempted), in nanoseconds, from every context switch. Needs root: admins only.',
	'alloc': 'Allocations: samples malloc and friends every N bytes allocated, with their stacks. Where memory is allocated. Needs the agent.',
	'heap': 'Live heap: sampled allocations still not freed at the end; what holds memory now (leaks, growth). Needs the agent.',
	'lock': 'Lock contention: time threads spend waiting for pthread mutexes, by the stack that waited. Needs the agent.',
	'page-faults': 'Page faults (software event): where the process touches memory that is not mapped in yet.',
	'context-switches': 'Context switches (software event): where threads leave the CPU, blocking or preempted.',
};

// The formats a profile's download defaults to.
export const FORMATS = ['flamegraph', 'tree', 'pprof', 'collapsed', 'speedscope', 'jfr', 'svg'];

// The actions on a worker, in the panel's order. key: the button's
// (and its id's); need: the name nprofd gives the action in a worker's
// "actions" when it differs from key.
export const ACTIONS = [
	{ key: 'stacks', label: 'Thread dump', what: 'the stack of every thread now (nprof stacks)' },
	{ key: 'heapdump', label: 'Heap snapshot', what: 'the live heap through the agent, as a profile' },
	{ key: 'heap-on', need: 'heap', label: 'Heap profiling on', what: 'switch the agent\'s heap profiling on' },
	{ key: 'heap-off', need: 'heap', label: 'Heap profiling off', what: 'switch the agent\'s heap profiling off' },
	{ key: 'coredump', label: 'Core file', what: 'a core file of the running process, for gdb (it keeps running)' },
	{ key: 'restart', label: 'Restart', what: 'restart through its supervisor', danger: true },
	{ key: 'attach', label: 'Attach agent', what: 'load nprof\'s agent into the running process (nprof attach): ' +
		'itimer, wall, alloc, heap and lock then work on it, without a restart' },
	{ key: 'detach', label: 'Detach agent', what: 'end the agent\'s sessions and hooks in the process (nprof detach)' },
];

// The states of an instance, as the instances view filters them.
export const STATES = ['RUNNING', 'FINISHED', 'STOPPED', 'FAILED'];

// What nprofd converts each stored format into (docs/api.md, Artifacts),
// and the views of each the page draws itself.
export const CONVERT = {
	pprof: ['flamegraph', 'tree', 'svg', 'speedscope', 'collapsed', 'jfr', 'dot', 'summary', 'traces', 'flat'],
	threads: ['text'],
};
export const VIEWS = { pprof: ['flamegraph', 'tree'], threads: ['threads'] };

// An instance's kind in words (a profile is named by its mode).
export const KINDS = { stacks: 'thread dump', heapdump: 'heap snapshot', coredump: 'core file' };
