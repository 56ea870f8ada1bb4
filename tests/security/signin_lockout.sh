#!/usr/bin/env bash
# Issue 23, hole 5: sign-in lockout per user name, and spraying from
# other 127.x addresses. A real hostile user fails again and again on an
# admin's name from 127.0.0.2: its own tries are refused (429), but the
# admin, from 127.0.0.1 where nothing failed, signs in right after; the
# wait of one name from one address grows after each failure past
# max_failures (1 s, then 2 s); spraying wrong passwords across names
# from eighty other 127.x addresses is cut by the door's rate
# (failures_per_minute), though each try comes from an address of its
# own: on loopback the kernel names the local user behind an address;
# the admin still signs in; every refusal is audited.
. "$(dirname "$0")/../integration/lib.sh"
need_build
need_daemon
not_ok() { not_ok_reply "$@"; }
command -v chpasswd >/dev/null || bail "chpasswd is installed (passwd)"

UA=nprofadm$$ UH=nprofhst$$ PWA="pwA-$$-Secret"
test_user "$UA" "$PWA" && test_user "$UH" || bail "useradd and chpasswd make the test users"
ASH="setpriv --reuid=$UH --regid=$UH --clear-groups --inh-caps=-all --bounding-set=-all"

cat >"$D/nprofd.conf" <<CONF
admin_users = $UA
[signin]
max_failures = 3
failure_window = 10m
CONF
start_daemon "$D/nprofd.conf" || bail "nprofd starts"
T0=$(date +%s.%N)

# signin AS FROM USER PASSWORD: POST /api/v1/session as AS (a setpriv
# command line, or "" for root) from address FROM; the reply in
# $TMP/api.out, the status in CODE.
signin() {
	CODE=$($1 curl -s -o - -w '%{stderr}%{http_code}' --max-time 60 --interface "$2" \
		-X POST -H 'Content-Type: application/json' \
		--data-binary "{\"user\": \"$3\", \"password\": \"$4\"}" \
		"http://$HTTP_ADDR/api/v1/session" 2>"$TMP/signin.code" >"$TMP/api.out")
	CODE=$(cat "$TMP/signin.code")
}
error_says() { json "$TMP/api.out" 'j["error"]' | grep -qE -- "$1"; }

# --- the admin's name from another address ------------------------------------
codes=
for i in 1 2 3 4 5 6 7 8 9 10; do
	signin "$ASH" 127.0.0.2 "$UA" "guess-$i"
	codes+=" $CODE"
done
diag "$UH guessing $UA's password from 127.0.0.2:$codes"
first=$(echo $codes | cut -d' ' -f1-3) rest=$(echo $codes | cut -d' ' -f4-)
check "$UH's first three guesses are checked (401), and most after max_failures = 3 refused (429)" \
	bash -c "[ '$first' = '401 401 401' ] && [ \$(tr ' ' '\n' <<<'$rest' | grep -c 429) -ge 5 ]"
# The lock's wait doubles with each failure it lets through: guessing on
# until it has 3 s or more left, the right password is asked within it
# on a loaded host too (a guess can take a second there). Bounded by
# time, not by guesses: refused ones come back at once, and twenty of
# them fit in a lock of one second (CI).
i=11 until=$((SECONDS + 60))
while [ "$SECONDS" -lt "$until" ]; do
	left=$(json "$TMP/api.out" 'j.get("error", "")' | sed -n 's/.*try again in \([0-9]*\) s.*/\1/p')
	[ "$CODE" = 429 ] && [ "${left:-0}" -ge 3 ] && break
	sleep 0.2
	signin "$ASH" 127.0.0.2 "$UA" "guess-$((i++))"
done
signin "$ASH" 127.0.0.2 "$UA" "$PWA"
check "the right password from 127.0.0.2 (the guesser's address) is refused meanwhile: 429 (the lock had ${left:-?} s left)" \
	[ "$CODE" = 429 ]
signin "" 127.0.0.1 "$UA" "$PWA"
check "and $UA signs in from 127.0.0.1, where nothing failed: 200" [ "$CODE" = 200 ]
[ "$CODE" = 200 ] || diag "$(cat "$TMP/api.out")"

# --- progressive waits: one name from one address -------------------------------
for i in 1 2 3; do signin "$ASH" 127.0.0.3 "nosuch$$" "x$i"; done
check "three failures of one name from 127.0.0.3: 401" [ "$CODE" = 401 ]
signin "$ASH" 127.0.0.3 "nosuch$$" x4
refused_saying() {
	[ "$CODE" = 429 ] && [ "$(json "$TMP/api.out" 'j["error"]' | wc -l)" = 1 ] || return 1
	for w; do error_says "$w" || return 1; done
}
check "the next at once: 429, one line naming the wait (try again in 1 s) and max_failures" \
	refused_saying 'try again in 1 s' max_failures
[ "$CODE" = 429 ] || diag "$(cat "$TMP/api.out")"
sleep 1.2
signin "$ASH" 127.0.0.3 "nosuch$$" x5
check "after that second: checked again (401)" [ "$CODE" = 401 ]
signin "$ASH" 127.0.0.3 "nosuch$$" x6
check "and the wait doubles: 429, try again in 2 s" refused_saying 'try again in 2 s'
[ "$CODE" = 429 ] || diag "$(cat "$TMP/api.out")"
signin "$ASH" 127.0.0.3 "other$$" x
check "another name from 127.0.0.3 is checked meanwhile (401)" [ "$CODE" = 401 ]

# --- spraying across names from eighty other addresses -------------------------
# The door's bucket holds failures_per_minute (30 by default) and gains
# one every two seconds: since nprofd started, at most 30 + T/2 passwords
# that failed can have been checked, T its seconds up, however fast or
# slow this machine sends them.
rm -f "$TMP/spray.codes"
spray_one() {
	$ASH curl -s -o - -w '%{stderr}%{http_code}\n' --max-time 60 --interface "127.0.1.$1" \
		-X POST -H 'Content-Type: application/json' \
		--data-binary "{\"user\": \"spray$1x$$\", \"password\": \"p$1\"}" \
		"http://$HTTP_ADDR/api/v1/session" >"$TMP/spray.$1.out" 2>>"$TMP/spray.codes"
}
for ((i = 1; i <= 80; i += 10)); do
	pids=()
	for ((j = i; j < i + 10; j++)); do spray_one "$j" & pids+=("$!"); done
	wait "${pids[@]}"
done
up=$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%d", b - a + 1 }')
n401=$(grep -c '^401$' "$TMP/spray.codes") n429=$(grep -c '^429$' "$TMP/spray.codes")
other=$(grep -vxE '401|429' "$TMP/spray.codes" | sort | uniq -c | tr '\n' ' ')
[ -z "$other" ] || diag "other answers: $other"
api GET "/api/v1/audit?limit=1000"
failed=$(json "$TMP/api.out" 'sum(1 for e in j["audit"] if e["path"] == "/api/v1/session" and e["status"] == 401)')
diag "spraying 80 names, each from an address of its own: $n401 checked (401), $n429 refused (429); $failed failures in all, $up s after nprofd started"
check "the spray meets the door's rate: some refused (429), though each came from a fresh address" [ "$n429" -gt 0 ]
check "at most failures_per_minute (30) + ${up}s / 2 failed passwords were checked since nprofd started ($failed)" \
	[ "$failed" -le $((30 + up / 2)) ]
check "a refusal names failures_per_minute" bash -c "cat '$TMP'/spray.*.out | grep -q failures_per_minute"
signin "" 127.0.0.1 "$UA" "$PWA"
check "and $UA, from 127.0.0.1, still signs in: 200" [ "$CODE" = 200 ]
[ "$CODE" = 200 ] || diag "$(cat "$TMP/api.out")"

api GET "/api/v1/audit?limit=200"
check "the audit log has the refusals (429, refused) and $UA's sign-ins (200, signed in)" \
	bash -c "python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))[\"audit\"]; s=[e for e in a if e[\"path\"] == \"/api/v1/session\"]; sys.exit(not (any(e[\"status\"] == 429 and e[\"result\"].startswith(\"refused\") for e in s) and any(e[\"status\"] == 200 and e[\"user\"] == sys.argv[2] and e[\"result\"].startswith(\"signed in\") for e in s)))' '$TMP/api.out' '$UA'"
finish
