"""Helpers shared by the benchmarks in bench/ (record-overhead, dwarf-overhead,
agent-overhead, alloc-overhead).

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


def run_target(cmd, tmp, env=None, timeout=300):
    """Runs cmd (which ends up running a program that prints "wall W cpu C"
    for its own work: tests/progs/spin, alloc_bench, lock_bench) with env
    (None: ours); returns that wall and CPU time, and the CPU time of
    everything else cmd ran (the profiler: its own process, the target's
    start-up and the profile's writing at exit included)."""
    c0 = children_cpu()
    r = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
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


def paired_noise(again, base):
    """The noise of a median of paired ratios, from an A/A pair: the same
    program run twice per repetition (again[i], base[i]). Three standard
    errors of the median of n ratios (1.2533 sigma / sqrt(n) each), or the
    A/A median's own distance from 1 when that is larger; 0 for one rep."""
    ratios = [a / b for a, b in zip(again, base)]
    if len(ratios) < 2:
        return abs(ratios[0] - 1) if ratios else 0.0
    se = 1.2533 * statistics.stdev(ratios) / len(ratios) ** 0.5
    return max(3 * se, abs(statistics.median(ratios) - 1))


def read_summary(path):
    """The fields of an nprof summary file (`output=summary`): value totals
    by type ('samples', 'cpu', 'contentions', ...: the number as written,
    a string), 'lost' (samples dropped, int) and 'notes' (a list); None
    when the file is missing."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    out = {'notes': [], 'lost': 0}
    for line in lines:
        key, _, rest = line.partition(' ')
        rest = rest.strip()
        if key == 'note':
            out['notes'].append(rest)
        elif key == 'degraded':
            out['lost'] = int(rest.split()[0])
        elif key and rest and key not in out:
            out[key] = rest
    return out


def proc_status_kib(pid, fields=('VmRSS', 'VmHWM', 'RssAnon', 'RssFile')):
    """Those fields of /proc/PID/status, in KiB."""
    out = {}
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            key, _, rest = line.partition(':')
            if key in fields:
                out[key] = int(rest.split()[0])
    return out
