"""Helpers shared by the benchmarks in bench/ (record-overhead, dwarf-overhead).

Imported by the scripts next to it: they put their own directory on sys.path
and turn off bytecode writing, so that running a benchmark leaves no
__pycache__ behind in the tree.
"""
import os
import resource
import statistics
import subprocess
import sys

# perf script -> collapsed stacks, root first (what stackcollapse-perf.pl does).
FOLD_AWK = r'''
function flush() {
	if (n > 0) { s = f[n]; for (i = n - 1; i >= 1; i--) s = s ";" f[i]; cnt[s]++ }
	n = 0
}
/^[^ \t#]/ { flush(); next }
/^[ \t]+[0-9a-f]+ / {
	sym = $2
	for (j = 3; j < NF; j++) sym = sym " " $j
	sub(/\+0x[0-9a-f]+$/, "", sym)
	if (sym == "[unknown]") { m = $NF; gsub(/[()]/, "", m); sub(/.*\//, "", m); sym = m }
	f[++n] = sym
	next
}
/^$/ { flush() }
END { flush(); for (s in cnt) print s, cnt[s] }
'''


def die(msg):
    """Exits with msg, prefixed by the running benchmark's name."""
    sys.exit('%s: %s' % (os.path.basename(sys.argv[0]), msg))


def children_cpu():
    """User + system CPU time of every waited-for child so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_target(cmd, tmp):
    """Runs cmd (which ends up running tests/progs/spin); returns spin's own
    wall and CPU time for its work, and the CPU time of everything else cmd
    ran (the profiler: its own process, start-up and writing included)."""
    c0 = children_cpu()
    r = subprocess.run(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=300)
    used = children_cpu() - c0
    for line in r.stdout.splitlines():
        w = line.split()
        if len(w) == 4 and w[0] == 'wall' and w[2] == 'cpu':
            return float(w[1]), float(w[3]), max(0.0, used - float(w[3]))
    die('no wall time from %s (status %d)\n%s' %
        (' '.join(cmd), r.returncode, r.stderr[-2000:]))


def has_frame(path, name):
    """Whether any line of the file at path contains name."""
    with open(path) as f:
        return any(name in line for line in f)


def fold_cmd(data, out):
    """A shell command: perf script on data, folded into collapsed stacks in out."""
    return 'perf script -i %s 2>/dev/null | awk \'%s\' > %s' % (data, FOLD_AWK, out)


def fold_perf(data, out):
    """perf script on data, folded into collapsed stacks in out."""
    subprocess.run(fold_cmd(data, out), shell=True, check=True)


def read_collapsed(path):
    """The stacks of a collapsed file: a list of (frames, count), root first."""
    stacks = []
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            stack, _, count = line.rpartition(' ')
            if stack and count.isdigit():
                stacks.append((stack.split(';'), int(count)))
    return stacks


def interleave(modes, rep):
    """modes rotated by rep, so that no mode always runs first."""
    k = rep % len(modes)
    return modes[k:] + modes[:k]


def median_ratio(values, base):
    """Median of the per-repetition ratios values[i] / base[i]: each
    repetition runs every mode back to back, so its ratios cancel slow drift
    (CPU frequency, the load of neighbours)."""
    return statistics.median(v / b for v, b in zip(values, base))


def noise_floor(values):
    """How much identical runs differ: (max - min) / median."""
    if len(values) < 2:
        return 0.0
    return (max(values) - min(values)) / statistics.median(values)
