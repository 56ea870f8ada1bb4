#!/usr/bin/env bash
# build/nprof's shared libraries are tests/integration/cli_libs.allow
# (issue 24: every command's start-up loads each of them and all they
# need). Its NEEDED entries (readelf -d: what we link) are the list's
# "needed" lines exactly; what `nprof --version` and a daemon command
# (`nprof workers`, no daemon there) really load (LD_DEBUG=files: ld.so's
# own account, a dlopen() at start included) is only the needed and
# "loaded" lines, and never libcurl, GnuTLS or Kerberos. How fast it
# starts is bench/README.md's to say (startup): no test holds a time.
. "$(dirname "$0")/lib.sh"
need_build
ALLOW=$NPROF_SRC/tests/integration/cli_libs.allow
LIST=tests/integration/cli_libs.allow
command -v readelf >/dev/null || bail "readelf is installed (binutils)"
[ -r "$ALLOW" ] || bail "the allow-list $LIST is there"

awk '$1 == "needed" { print $2 }' "$ALLOW" | sort -u >"$TMP/allow.needed"
awk '$1 == "needed" || $1 == "loaded" { print $2 }' "$ALLOW" | sort -u >"$TMP/allow.all"
[ -s "$TMP/allow.needed" ] || bail "$LIST has needed lines"

# --- what is linked ----------------------------------------------------------
readelf -d "$NPROF" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' | sort -u >"$TMP/needed"
grep -qx 'libc.so.6' "$TMP/needed" || bail "readelf -d lists build/nprof's NEEDED entries, libc among them"
extra=$(comm -23 "$TMP/needed" "$TMP/allow.needed")
gone=$(comm -13 "$TMP/needed" "$TMP/allow.needed")
if [ -z "$extra$gone" ]; then
	ok "build/nprof needs exactly the $(wc -l <"$TMP/needed") libraries $LIST allows: $(tr '\n' ' ' <"$TMP/needed")"
else
	not_ok "build/nprof needs exactly the libraries $LIST allows"
	for l in $extra; do
		diag "build/nprof needs $l, which $LIST does not allow: every nprof command would load it and all it needs at start-up; link it only into what uses it (nprofd's DAEMON_LIBS in the Makefile, or dlopen it in the command that needs it), or, if every command needs it and it is cheap, add a needed line saying why"
	done
	for l in $gone; do
		diag "$LIST allows $l, which build/nprof no longer needs: remove its line"
	done
fi

# --- what is loaded ------------------------------------------------------------
# loads NAME ARGS...: runs nprof ARGS under LD_DEBUG=files, and writes
# "LIBRARY WHO-NEEDED-IT" for each object ld.so loaded to $TMP/NAME.loaded.
loads() {
	local name=$1
	shift
	rm -f "$TMP/ld-$name".*
	timeout 30 env LD_DEBUG=files LD_DEBUG_OUTPUT="$TMP/ld-$name" "$NPROF" "$@" >/dev/null 2>&1
	cat "$TMP/ld-$name".* 2>/dev/null |
		sed -n 's#.*file=\([^ ]*\) \[[0-9]*\];  \(needed\|dynamically loaded\) by \([^ ]*\) .*#\1 \3#p' |
		sed 's|^[^ ]*/||' | sort -u >"$TMP/$name.loaded"
}

# check_loads DESCRIPTION NAME: what NAME loaded is only what the list
# allows. A line for each library not allowed that nprof or an allowed
# one brought in, one more for all those it brought in after it.
check_loads() {
	local desc=$1 name=$2 lib by n more=""
	if ! grep -q '^libc\.so\.6 ' "$TMP/$name.loaded"; then
		not_ok "$desc: LD_DEBUG=files accounts for what it loads (libc at least)"
		return
	fi
	n=$(cut -d' ' -f1 "$TMP/$name.loaded" | sort -u | wc -l)
	cut -d' ' -f1 "$TMP/$name.loaded" | sort -u | comm -23 - "$TMP/allow.all" >"$TMP/$name.bad"
	if [ ! -s "$TMP/$name.bad" ]; then
		ok "$desc loads only what $LIST allows ($n libraries)"
		return
	fi
	not_ok "$desc loads only what $LIST allows"
	while read -r lib by; do
		grep -qxF "$lib" "$TMP/$name.bad" || continue
		if [ "${by##*/}" = "${NPROF##*/}" ] || grep -qxF "${by##*/}" "$TMP/allow.all"; then
			diag "nprof $desc loaded $lib (for ${by##*/}), which $LIST does not allow: load it only in the command that uses it (LD_DEBUG=files $NPROF $desc shows who brings it in), or, if a needed library brings it in on this distribution, add a loaded line saying so"
		else
			more="$more $lib"
		fi
	done <"$TMP/$name.loaded"
	[ -z "$more" ] || diag "...which brought in $(echo $more | wc -w) more:$more"
}

loads version --version
check_loads "--version" version
# libcurl and what it brought in (issue 24), whatever the list says
CURLISH='^lib(curl|gnutls|nettle|hogweed|gssapi|krb5|k5crypto|ldap|lber|sasl2|ssh2|rtmp|nghttp2|psl|idn2|brotli|crypto|ssl)'
if ! grep -q '^libc\.so\.6 ' "$TMP/version.loaded" || grep -qE "$CURLISH" "$TMP/version.loaded"; then
	not_ok "--version starts without libcurl and what it pulls in (TLS, Kerberos, LDAP, SASL, ssh2, rtmp)"
	diag "nprof --version loaded: $(grep -E "$CURLISH" "$TMP/version.loaded" | cut -d' ' -f1 | tr '\n' ' ')"
else
	ok "--version starts without libcurl and what it pulls in (TLS, Kerberos, LDAP, SASL, ssh2, rtmp)"
fi

# A daemon command goes all the way through its client to the socket.
NPROF_SOCKET=$TMP/no-nprofd.sock loads workers workers
check_loads "workers" workers
finish
