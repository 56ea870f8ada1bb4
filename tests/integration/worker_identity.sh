#!/usr/bin/env bash
# A worker's identity from its cgroup, on this host's own cgroups: idle
# test programs moved (echo PID > cgroup.procs) into directories named
# as Kubernetes names a pod's container under the cgroupfs driver
# (burstable and guaranteed) and the systemd driver (containerd's
# scope, besteffort), as docker names a container's scope, and as
# systemd names a unit — in the unified (v2) hierarchy, and on a hybrid
# host also in a v1 one while the unified path is "/" — are listed by a
# private nprofd with the right container_id, container_runtime,
# pod_uid, qos_class, unit, slice, service and service_source
# (docs/identity.md); ?container=, ?pod=, ?unit=, ?qos= find each alone;
# a [service] section names its own; moved back, the program is its
# executable again; `nprof workers --container` shows it. Everything
# made lives under one directory of the test's own in each hierarchy,
# removed at the end (the programs moved back to the root first).
. "$(dirname "$0")/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }

# --- the hierarchies -----------------------------------------------------------

# The unified (v2) hierarchy's mount, and a v1 one to write to when the
# host also has v1 (hybrid): name=systemd's, else cpu's.
V2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
V1=$(awk '$3 == "cgroup" && $4 ~ /(^|,)name=systemd(,|$)/ { print $2; exit }' /proc/self/mounts)
[ -n "$V1" ] || V1=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ { print $2; exit }' /proc/self/mounts)
if [ -z "$V2" ]; then
	skip "worker identity" "no cgroup2 hierarchy is mounted here (/proc/self/mounts)"
	finish
fi
TOP=nprof-identity.$$
mkdir "$V2/$TOP" 2>"$TMP/mkdir.err" || {
	skip "worker identity" "cannot make a cgroup in $V2: $(head -1 "$TMP/mkdir.err")"
	finish
}
made=("$V2/$TOP")
V1TOP=""
if [ -n "$V1" ] && mkdir "$V1/$TOP" 2>/dev/null; then
	V1TOP=$V1/$TOP
	made+=("$V1TOP")
fi

# Moves every process in what the test made back to that hierarchy's
# root, then removes the directories, deepest first. Before lib.sh's
# cleanup (which kills the programs and removes $TMP).
cgroups_cleanup() {
	local top procs p d
	for top in "${made[@]}"; do
		while read -r procs; do
			while read -r p; do
				echo "$p" >"${top%/*}/cgroup.procs" 2>/dev/null
			done <"$procs"
		done < <(find "$top" -name cgroup.procs 2>/dev/null)
		find "$top" -depth -type d -exec rmdir {} \; 2>/dev/null
		[ ! -d "$top" ] || echo "# left behind: $top" >&2
	done
}
trap 'cgroups_cleanup; cleanup' EXIT

# into HIERARCHY_DIR PATH PID: makes the directories of PATH under it and
# moves PID into the innermost; non-zero, saying why, if it cannot.
into() {
	mkdir -p "$1/$2" && echo "$3" >"$1/$2/cgroup.procs" || {
		diag "cannot move $3 into $1/$2"
		return 1
	}
}

# Ids made afresh: 64 hex digits; a pod's uid, with dashes.
hex() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }
uuid() { local h; h=$(hex 16); echo "${h:0:8}-${h:8:4}-${h:12:4}-${h:16:4}-${h:20:12}"; }

# --- the daemon and the programs ---------------------------------------------------

cat >"$D/nprofd.conf" <<CONF
# the test's daemon: one [service] section, selecting a unit of the test's
[service identity-named]
match = unit:nprof-identity-named.service
CONF
start_daemon "$D/nprofd.conf" || bail "nprofd starts"
ok "nprofd starts"

start_idle() { start_prog "$1" "$PROGS/eight_threads" --threads 2 || bail "eight_threads ($1) gets ready"; }

ID_A=$(hex 32) UID_A=$(uuid)	# cgroupfs driver, burstable
ID_B=$(hex 32) UID_B=$(uuid)	# cgroupfs driver, guaranteed
ID_C=$(hex 32) UID_C=$(uuid)	# systemd driver, containerd, besteffort
ID_D=$(hex 32)			# docker's scope
UID_C_=${UID_C//-/_}

start_idle a && PA=$PID && into "$V2/$TOP" "kubepods/burstable/pod$UID_A/$ID_A" "$PA" || bail "pod A"
start_idle b && PB=$PID && into "$V2/$TOP" "kubepods/pod$UID_B/$ID_B" "$PB" || bail "pod B"
start_idle c && PC=$PID &&
	into "$V2/$TOP" "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod$UID_C_.slice/cri-containerd-$ID_C.scope" "$PC" ||
	bail "pod C"
start_idle d && PD=$PID && into "$V2/$TOP" "system.slice/docker-$ID_D.scope" "$PD" || bail "docker D"
start_idle e && PE=$PID && into "$V2/$TOP" "system.slice/nprof-identity-test.service" "$PE" || bail "unit E"
start_idle f && PF=$PID && into "$V2/$TOP" "system.slice/nprof-identity-named.service" "$PF" || bail "unit F"
ok "six programs moved into cgroups under $V2/$TOP"

# is PID "WHAT" FIELD=VALUE...: one check, that GET /api/v1/workers/ID
# of PID's worker, read now, has each.
is() {
	local pid=$1 what=$2 bad
	shift 2
	api GET "/api/v1/workers/$(worker_of "$pid")"
	# (one python for every field: each start costs a few hundred ms)
	bad=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
for kv in sys.argv[2:]:
    k, v = kv.split("=", 1)
    if str(j.get(k)) != v:
        print(" %s=%r (want %r)" % (k, j.get(k), v), end="")
' "$TMP/api.out" "$@" 2>&1)
	if [ -z "$bad" ]; then ok "$what"; else not_ok "$what:$bad"; fi
}

is "$PA" "cgroupfs driver, burstable: the container, the pod, no runtime named" \
	"container_id=$ID_A" "container=${ID_A:0:12}" container_runtime= "pod_uid=$UID_A" \
	qos_class=burstable unit= "service=${ID_A:0:12}" service_source=container \
	"cgroup=/$TOP/kubepods/burstable/pod$UID_A/$ID_A"
is "$PB" "cgroupfs driver, guaranteed (no class directory)" \
	"container_id=$ID_B" "pod_uid=$UID_B" qos_class=guaranteed service_source=container
is "$PC" "systemd driver: containerd's scope, the pod's uid with dashes, besteffort" \
	"container_id=$ID_C" container_runtime=containerd "pod_uid=$UID_C" qos_class=besteffort \
	"unit=cri-containerd-$ID_C.scope" "slice=kubepods-besteffort-pod$UID_C_.slice" \
	"service=${ID_C:0:12}" service_source=container
is "$PD" "docker's scope: the container, not its scope, is the service" \
	"container_id=$ID_D" container_runtime=docker pod_uid= qos_class= \
	"unit=docker-$ID_D.scope" slice=system.slice "service=${ID_D:0:12}" service_source=container
is "$PE" "a systemd unit: the unit is the service" \
	container_id= pod_uid= unit=nprof-identity-test.service slice=system.slice \
	service=nprof-identity-test.service service_source=unit
is "$PF" "a [service] section takes its unit's workers" \
	unit=nprof-identity-named.service service=identity-named service_source=config

# --- filters -------------------------------------------------------------------

# listed QUERY PID...: up to 5 s (lists are kept a second) for the list
# ?QUERY to hold exactly these pids among the test's programs.
listed() {
	local q=$1 want got i
	shift
	want=$(printf '%s\n' "$@" | sort -n | tr '\n' ' ')
	for ((i = 0; i < 50; i++)); do
		api GET "/api/v1/workers?$q"
		got=$(json "$TMP/api.out" "' '.join(str(p) for p in sorted(w['pid'] for w in j['workers'] if w['pid'] in ($PA, $PB, $PC, $PD, $PE, $PF))) + ' '")
		[ "$got" = "$want" ] && return 0
		sleep 0.1
	done
	diag "?$q: pids '$got', want '$want'"
	return 1
}

check "?container=PREFIX finds the one container" listed "container=${ID_C:0:10}" "$PC"
check "?container=WHOLE-ID finds it too" listed "container=$ID_D" "$PD"
check "?container= (empty) lists every container's worker" listed "container=" "$PA" "$PB" "$PC" "$PD"
check "?pod=PREFIX finds the pod" listed "pod=${UID_A:0:13}" "$PA"
check "?qos=guaranteed, burstable, besteffort" \
	eval 'listed qos=guaranteed "$PB" && listed qos=burstable "$PA" && listed qos=besteffort "$PC"'
check "?unit=GLOB" listed "unit=nprof-identity-*.service" "$PE" "$PF"
check "?service= takes the service as named" listed "service=${ID_A:0:12}" "$PA"
api GET "/api/v1/workers?qos=fast"
check "?qos=fast is a 400 naming qos" error_names 400 qos

# --- nprof workers ---------------------------------------------------------------

NPROF_SOCKET=$SOCK COLUMNS=200 "$NPROF" workers --container "${ID_D:0:8}" >"$TMP/np.out" 2>"$TMP/np.err"
if awk -v p="$PD" -v c="${ID_D:0:12}" '$2 == p && index($0, " " c " ") { f = 1 } END { exit !f }' "$TMP/np.out" &&
	[ "$(grep -c '^[0-9]' "$TMP/np.out")" = 1 ] && head -1 "$TMP/np.out" | grep -q ' CONTAINER '; then
	ok "nprof workers --container shows the one worker, its short id in CONTAINER"
else
	not_ok "nprof workers --container"
	diag_file "$TMP/np.out"
	diag_file "$TMP/np.err"
fi
NPROF_SOCKET=$SOCK COLUMNS=200 "$NPROF" workers --pod "$UID_C" --unit 'cri-containerd-*' --json >"$TMP/np.json" 2>"$TMP/np.err"
check "nprof workers --pod --unit --json: the pod's worker alone" \
	test "$(json "$TMP/np.json" "[w['pid'] for w in j['workers']]")" = "[$PC]"

# --- a hybrid host: the unified path is "/", v1's says it all ----------------------

if [ -n "$V1TOP" ]; then
	ID_G=$(hex 32)
	echo "$PD" >"$V2/cgroup.procs"
	if into "$V1TOP" "docker/$ID_G" "$PD"; then
		is "$PD" "hybrid: unified at '/', the container from the v1 line ($(basename "$V1"))" \
			"container_id=$ID_G" container_runtime=docker cgroup=/ service_source=container
		echo "$PD" >"$V1/cgroup.procs"
	else
		not_ok "hybrid: moving into $V1TOP"
	fi
else
	skip "hybrid: the container from a v1 line" "no v1 hierarchy here (a v2-only host)"
fi

# --- moved back: the program is itself again ---------------------------------------

echo "$PA" >"$V2/cgroup.procs"
is "$PA" "moved back to the root: no container, no pod; the executable names it" \
	container_id= pod_uid= qos_class= service=eight_threads service_source=exe

finish
