#!/usr/bin/env bash
# nprofd.conf(5) holds every key nprofd takes, in its section's table,
# and no key nprofd does not: each section's keys are what nprofd itself
# lists as valid (its one-line error for an unknown key, from the table
# in src/daemon/core/config.c), and each is a row (or in a row) of the table
# under that section's heading in docs/nprofd.conf.5.md; the synopsis
# names each of them too.
. "$(dirname "$0")/lib.sh"
NPROFD=$NPROF_BUILD/nprofd
[ -x "$NPROFD" ] || bail "nprofd is built ($NPROFD)"
DOC=$NPROF_SRC/docs/nprofd.conf.5.md

# keys_of HEADER: the keys nprofd lists for the section opened by HEADER
# ("" for the top).
keys_of() {
	case $1 in
	'') printf 'no_such_key_x = 1\n' ;;
	'[service a]') printf '%s\nmatch = all\nno_such_key_x = 1\n' "$1" ;;
	'[command a]') printf '%s\nrun = x\nno_such_key_x = 1\n' "$1" ;;
	*) printf '%s\nno_such_key_x = 1\n' "$1" ;;
	esac >"$TMP/k.conf"
	"$NPROFD" --check-config --config "$TMP/k.conf" 2>&1 | sed -n 's/.*valid keys: //p' | tr -d ' ' | tr ',' '\n'
}
# doc_rows HEADING: the keys in the first cell of each table row under
# "## HEADING" of the page, up to the next "## ".
doc_rows() {
	awk -v h="## $1" '$0 == h { on = 1; next } /^## / { on = 0 } on && /^\| `/' "$DOC" |
		cut -d'|' -f2 | grep -o '`[a-z_]*`' | tr -d '`'
}
synopsis=$(awk '/^## Synopsis/ { on = 1; next } /^## / { on = 0 } on' "$DOC")
for pair in "|Top" "[workers]|[workers]" "[instances]|[instances]" "[actions]|[actions]" \
	"[artifacts]|[artifacts]" "[signin]|[signin]" "[cluster]|[cluster]" \
	"[service a]|[service NAME]" "[command a]|[command NAME]" "[schedule a]|[schedule NAME]"; do
	header=${pair%%|*} heading=${pair#*|}
	keys=$(keys_of "$header" | sort)
	rows=$(doc_rows "$heading" | sort -u)
	[ -n "$keys" ] || { not_ok "$heading: nprofd lists its keys"; continue; }
	missing=$(comm -23 <(echo "$keys") <(echo "$rows") | tr '\n' ' ')
	extra=$(comm -13 <(echo "$keys") <(echo "$rows") | tr '\n' ' ')
	check "$heading: each of nprofd's $(echo "$keys" | wc -l) keys has its row in nprofd.conf.5.md${missing:+ (missing: $missing)}" \
		[ -z "$missing" ]
	check "$heading: no row names a key nprofd does not take${extra:+ ($extra)}" [ -z "$extra" ]
	unnamed=
	for k in $keys; do
		grep -qE "(^|[[:space:],])$k( |$|,)" <<<"$synopsis" || unnamed+="$k "
	done
	check "$heading: the synopsis names each${unnamed:+ (not: $unnamed)}" [ -z "$unnamed" ]
done
finish
