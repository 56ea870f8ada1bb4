# nprof — build out of tree into build/. `make` builds, `make check` tests,
# `make run` profiles the demo. See docs/layout.md for the tree.

BUILD    ?= build
# `make V=1` shows every command; by default one short line per step.
V        ?= 0
Q        := $(if $(filter 1,$(V)),,@)
msg       = $(if $(filter 1,$(V)),,@printf '  %-7s %s\n' $(1) $(2))
CC       ?= cc
CXX      ?= c++
CFLAGS   ?= -O2 -g
WARN     := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow \
            -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
ALL_CFLAGS := -std=gnu11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -fno-omit-frame-pointer \
            -fvisibility=hidden -Iinclude -Isrc -I$(BUILD)/gen -MMD -MP
LIBS     := -ldw -lelf -liberty -lz -lm -lpthread
# nprofd's client (src/client/daemon_client.c) is in the core library and
# reads nprofd's JSON with jansson (60 KB, libc alone); --as-needed keeps
# it out of what does not use it (libnprof.so, preloaded into services).
# Nothing here links libcurl: it and the thirty libraries it loads (TLS,
# Kerberos, LDAP...) are nprofd's alone (DAEMON_LIBS), so that every
# nprof command starts without them (issue 24). tests/integration/cli_libs.sh
# holds build/nprof's libraries to tests/integration/cli_libs.allow.
LIBS     += -Wl,--as-needed -ljansson -Wl,--no-as-needed

# The layers, bottom up (docs/layout.md). Every .c in these folders goes
# into the core library that the CLI, the tests and later the daemon link.
CORE_DIRS := src/base src/unwind src/profile src/symbolize src/output src/threaddump \
             src/engine src/capture \
             src/client src/inject
CORE_SRC  := $(foreach d,$(CORE_DIRS),$(wildcard $(d)/*.c))
CORE_OBJ  := $(CORE_SRC:%.c=$(BUILD)/%.o)
CORE_LIB  := $(BUILD)/libnprof-core.a

CLI_SRC   := $(wildcard src/cli/*.c)
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/%.o)
NPROF     := $(BUILD)/nprof

# --help text comes from the man page source: the first ``` block of each
# docs/nprof*.1.md becomes a C string (scripts/md2help).
HELP_MD   := $(wildcard docs/nprof*.1.md)
HELP_H    := $(HELP_MD:docs/%.1.md=$(BUILD)/gen/help/%.h) $(BUILD)/gen/help/nprofd.h

# Templates under src/output/res/ are embedded as C arrays (scripts/embed):
# build/gen/res/NAME.h, included by the writer that uses them.
RES       := $(wildcard src/output/res/*)
RES_H     := $(RES:src/output/res/%=$(BUILD)/gen/res/%.h)
GEN_H     := $(HELP_H) $(RES_H)

# pprof's schema (src/output/profile.proto) becomes build/gen/profile.pb-c.{c,h}
# (protoc-c), compiled into the core library beside src/output/pprof*.c.
PROTO_C   := $(BUILD)/gen/profile.pb-c.c
CORE_OBJ  += $(BUILD)/gen/profile.pb-c.o
GEN_H     += $(BUILD)/gen/profile.pb-c.h
LIBS      += -lprotobuf-c

UNIT_SRC  := $(wildcard tests/unit/*_test.c)
UNIT_BIN  := $(UNIT_SRC:%.c=$(BUILD)/%)

# Keep generated headers and objects that make would treat as intermediate.
.SECONDARY:

.PHONY: all check run clean progs unit bench fuzz fuzz-long
all: $(NPROF) progs unit fuzz layers

# The layering of docs/design.md, proven on every build (scripts/check-layers).
LAYERS_OK := $(BUILD)/layers.ok
$(LAYERS_OK): $(shell find src -name '*.[ch]') scripts/check-layers
	@mkdir -p $(@D)
	$(call msg,LAYERS,src)
	$(Q)scripts/check-layers src && touch $@
layers: $(LAYERS_OK)
.PHONY: layers

$(BUILD)/%.o: %.c | $(GEN_H)
	@mkdir -p $(@D)
	$(call msg,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(CORE_LIB): $(CORE_OBJ)
	@rm -f $@
	$(call msg,AR,$@)
	$(Q)ar rcs $@ $^

$(NPROF): $(CLI_OBJ) $(CORE_LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(CLI_OBJ) $(CORE_LIB) $(LIBS)

$(BUILD)/gen/help/%.h: docs/%.1.md scripts/md2help
	@mkdir -p $(@D)
	$(call msg,GEN,$@)
	$(Q)scripts/md2help $< > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/help/nprofd.h: docs/nprofd.8.md scripts/md2help
	@mkdir -p $(@D)
	$(call msg,GEN,$@)
	$(Q)scripts/md2help $< > $@.tmp && mv $@.tmp $@

# A page inlines the scripts and styles it shares with other pages (scripts/embed).
$(filter %.html.h,$(RES_H)): $(filter %.js %.css,$(RES))

$(BUILD)/gen/res/%.h: src/output/res/% scripts/embed
	@mkdir -p $(@D)
	$(call msg,GEN,$@)
	$(Q)scripts/embed $< > $@.tmp && mv $@.tmp $@

$(PROTO_C): src/output/profile.proto
	@mkdir -p $(@D)
	$(call msg,GEN,$@)
	$(Q)protoc-c --proto_path=src/output --c_out=$(@D) $<

$(BUILD)/gen/profile.pb-c.h: $(PROTO_C) ;

$(BUILD)/gen/profile.pb-c.o: $(PROTO_C)
	$(call msg,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/tests/unit/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(CORE_LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(CORE_LIB) $(LIBS)

unit: $(UNIT_BIN)

# libFuzzer targets: tests/fuzz/<name>_fuzz.c, built with clang, ASan and
# UBSan against the core sources compiled the same way. `make check` runs
# each for FUZZ_SECONDS on its corpus (tests/fuzz/corpus/<name>/);
# `make fuzz-long` runs them for FUZZ_LONG_SECONDS.
FUZZ_CC     := clang
FUZZ_FLAGS  := -std=gnu11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer-no-link,address,undefined \
               -fno-sanitize-recover=undefined -Iinclude -Isrc -I$(BUILD)/gen -MMD -MP
FUZZ_SRC    := $(wildcard tests/fuzz/*_fuzz.c)
FUZZ_BIN    := $(FUZZ_SRC:%.c=$(BUILD)/%)
FUZZ_CORE   := $(CORE_SRC:%.c=$(BUILD)/fuzz-obj/%.o)
FUZZ_CORE   += $(BUILD)/fuzz-obj/gen/profile.pb-c.o
FUZZ_SECONDS ?= 10
FUZZ_LONG_SECONDS ?= 600

$(BUILD)/fuzz-obj/%.o: %.c | $(GEN_H)
	@mkdir -p $(@D)
	$(call msg,FUZZCC,$<)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -c $< -o $@

$(BUILD)/fuzz-obj/gen/profile.pb-c.o: $(PROTO_C)
	@mkdir -p $(@D)
	$(call msg,FUZZCC,$<)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -c $< -o $@

$(BUILD)/tests/fuzz/%: tests/fuzz/%.c $(FUZZ_CORE)
	@mkdir -p $(@D)
	$(call msg,FUZZLD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_CORE) $(LIBS)

# The agent's own readers of what its callers send (its option string,
# /prof's parameters, the HTTP token), linked with their sources.
FUZZ_AGENT_OBJ := $(BUILD)/fuzz-obj/src/agent/options.o $(BUILD)/fuzz-obj/src/agent/http_auth.o
$(BUILD)/tests/fuzz/agent_params_fuzz: tests/fuzz/agent_params_fuzz.c $(FUZZ_CORE) $(FUZZ_AGENT_OBJ)
	@mkdir -p $(@D)
	$(call msg,FUZZLD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_CORE) $(FUZZ_AGENT_OBJ) $(LIBS)

fuzz: $(FUZZ_BIN)

fuzz-long: $(FUZZ_BIN)
	FUZZ_SECONDS=$(FUZZ_LONG_SECONDS) tests/fuzz/run-all $(BUILD)

# --- the in-process agent: build/libnprof.so (docs/agent.md) -----------------
# Every object is built -fPIC so that the core library can be linked into
# the agent. src/agent/libnprof.map exports only nprof_* and the libc
# functions the agent interposes. Objects in src/agent/hot/ run in signal
# handlers: scripts/check-hot (tests/integration/agent_hot_check.sh) proves
# they reference only async-signal-safe symbols. Agent unit tests
# (tests/unit/agent*_test.c) link the agent objects directly.
ALL_CFLAGS += -fPIC
AGENT_SRC := $(wildcard src/agent/*.c src/agent/hot/*.c)
AGENT_OBJ := $(AGENT_SRC:%.c=$(BUILD)/%.o)
AGENT_SO  := $(BUILD)/libnprof.so
AGENT_MAP := src/agent/libnprof.map

$(AGENT_SO): $(AGENT_OBJ) $(CORE_LIB) $(AGENT_MAP)
	$(call msg,LINK,$@)
	$(Q)$(CC) -shared -Wl,--version-script=$(AGENT_MAP) -Wl,-z,defs -Wl,-soname,libnprof.so \
		-o $@ $(AGENT_OBJ) $(CORE_LIB) $(LIBS) -ldl -lrt

$(BUILD)/tests/unit/agent%: tests/unit/agent%.c tests/unit/test.h $(AGENT_OBJ) $(CORE_LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(AGENT_OBJ) $(CORE_LIB) $(LIBS) -ldl -lrt

agent: $(AGENT_SO)
all: $(AGENT_SO)
.PHONY: agent

# --- sanitizer builds of the agent: make sanitize-asan, make sanitize-tsan ---
# libnprof.so and the programs tests/integration/agent_sanitize.sh preloads
# it into, built with clang (gcc's ASan refuses to run behind LD_PRELOAD)
# and the warnings above: -fsanitize=address,undefined into
# BUILD/sanitize/asan/, -fsanitize=thread into BUILD/sanitize/tsan/. Not
# part of `all` (minutes of compiling): the test makes both (in `make
# check` too), and `make sanitize` runs it at the judged 1,000 cycles.
# The paths are absolute, so that `make sanitize` (BUILD=build) and the
# test (BUILD=/abs/build) name the same targets and share the .d files.
SAN_DIR    := $(abspath $(BUILD))/sanitize
SAN_CC     := clang
SAN_CFLAGS := -std=gnu11 -D_GNU_SOURCE $(WARN) -O1 -g -fPIC -fno-omit-frame-pointer \
              -fvisibility=hidden -fno-sanitize-recover=undefined \
              -Iinclude -Isrc -I$(BUILD)/gen -MMD -MP
SAN_asan   := -fsanitize=address,undefined
SAN_tsan   := -fsanitize=thread
SAN_PROGS  := split agent_cycles alloc_storm
# src/agent/hot/ and the unwinder's walker run in signal handlers and read
# other frames of the interrupted stack by design (ASan's redzones, TSan's
# shadow of another context): UBSan only. scripts/check-hot holds them to
# async-signal-safe calls.
SAN_UBSAN_ONLY := src/agent/hot/%.c src/unwind/walker.c
# TSan intercepts malloc, the pthread locks, sigaction and execve in the
# program: the agent's interposers of those are left out of its build.
SAN_NO_INTERPOSE := src/agent/hot/alloc.c src/agent/hot/lock.c src/agent/hot/signals.c \
                    src/agent/exec.c
# san_flags VARIANT: the sanitizer flags for $< in that variant.
san_flags = $(if $(filter $(SAN_UBSAN_ONLY),$<),-fsanitize=undefined,$(SAN_$(1))) \
            $(if $(filter tsan,$(1)),$(if $(filter $(SAN_NO_INTERPOSE),$<),-DNPROF_NO_INTERPOSE))
# san_obj DIR,OBJS: the normal build's OBJS in BUILD/sanitize/DIR.
san_obj = $(patsubst $(BUILD)/%,$(SAN_DIR)/$(1)/%,$(2))
# Outputs are written beside and renamed into place: a test still running
# the old ones, or a second make, never sees half a file.
san_tmp = $@.$$$$

define san_cc
	@mkdir -p $(@D)
	$(call msg,$(2),$<)
	$(Q)$(SAN_CC) $(SAN_CFLAGS) $(call san_flags,$(1)) -c $< -o $@
endef
$(SAN_DIR)/asan/obj/%.o: %.c | $(GEN_H)
	$(call san_cc,asan,ASAN-CC)
$(SAN_DIR)/tsan/obj/%.o: %.c | $(GEN_H)
	$(call san_cc,tsan,TSAN-CC)
$(SAN_DIR)/asan/obj/gen/profile.pb-c.o: $(PROTO_C) | $(GEN_H)
	$(call san_cc,asan,ASAN-CC)
$(SAN_DIR)/tsan/obj/gen/profile.pb-c.o: $(PROTO_C) | $(GEN_H)
	$(call san_cc,tsan,TSAN-CC)

# TSan: the agent does not take over pthread_create (its wrapper would run
# instrumented code in a new thread before TSan's own start), nor the
# malloc family and lock acquisitions (TSan would call ours as the "real"
# ones during its own start-up); it exports only nprof_*. Whatever an
# object still defines of what src/agent/libnprof.map interposes is
# renamed nprof_tsan_NAME, so that the agent's own calls (malloc,
# pthread_mutex_lock) reach TSan's interceptors.
$(SAN_DIR)/tsan/libnprof.map:
	@mkdir -p $(@D)
	$(Q)echo '{ global: nprof_*; local: *; };' >$@

$(SAN_DIR)/tsan/interposed: $(AGENT_MAP)
	@mkdir -p $(@D)
	$(Q)sed 's|/\*.*\*/||g; s|^ \*.*||' $< | tr -s ' \t;:' '\n\n\n\n' | \
		grep -E '^[a-z_][a-z_0-9]*$$' | grep -vE '^(nprof_.*|global|local)$$' >$(san_tmp) && \
		mv -f $(san_tmp) $@

$(SAN_DIR)/tsan/renamed/%.o: $(SAN_DIR)/tsan/obj/%.o $(SAN_DIR)/tsan/interposed
	@mkdir -p $(@D)
	$(Q)objcopy $$(nm --defined-only $< | awk 'NR == FNR { want[$$1] = 1; next } \
		want[$$3] { printf " --redefine-sym %s=nprof_tsan_%s", $$3, $$3 }' $(SAN_DIR)/tsan/interposed -) \
		$< $(san_tmp) && mv -f $(san_tmp) $@

# The core library as an archive, as for build/libnprof.so: the agent
# links only what it uses of it.
$(SAN_DIR)/asan/libnprof-core.a: $(call san_obj,asan/obj,$(CORE_OBJ))
$(SAN_DIR)/tsan/libnprof-core.a: $(call san_obj,tsan/renamed,$(CORE_OBJ))
$(SAN_DIR)/%/libnprof-core.a:
	@mkdir -p $(@D)
	$(call msg,AR,$@)
	$(Q)ar rcs $(san_tmp) $^ && mv -f $(san_tmp) $@

# Without -z defs: the sanitizer runtime is linked into the program, and
# the preloaded library resolves the runtime's symbols there.
$(SAN_DIR)/asan/libnprof.so: $(call san_obj,asan/obj,$(AGENT_OBJ)) $(SAN_DIR)/asan/libnprof-core.a \
	$(AGENT_MAP)
$(SAN_DIR)/tsan/libnprof.so: $(call san_obj,tsan/renamed,$(AGENT_OBJ)) \
	$(SAN_DIR)/tsan/libnprof-core.a $(SAN_DIR)/tsan/libnprof.map
$(SAN_DIR)/%/libnprof.so:
	$(call msg,LINK,$@)
	$(Q)$(SAN_CC) -shared $(SAN_$*) -Wl,--version-script=$(filter %.map,$^) -Wl,-soname,libnprof.so \
		-o $(san_tmp) $(filter %.o,$^) $(filter %.a,$^) $(LIBS) -ldl -lrt && \
		mv -f $(san_tmp) $@

# The programs, from tests/progs/ (which define _GNU_SOURCE themselves).
define san_prog
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(SAN_CC) -std=gnu11 $(WARN) -O1 -g -fno-omit-frame-pointer -pthread $(SAN_$(1)) \
		-fno-sanitize-recover=undefined -MMD -MP -MF $@.d -MT $@ -o $(san_tmp) $< -ldl -lm && \
		mv -f $(san_tmp) $@
endef
$(SAN_PROGS:%=$(SAN_DIR)/asan/%): $(SAN_DIR)/asan/%: tests/progs/%.c
	$(call san_prog,asan)
$(SAN_PROGS:%=$(SAN_DIR)/tsan/%): $(SAN_DIR)/tsan/%: tests/progs/%.c
	$(call san_prog,tsan)

# The sanitizers' symbolizer runs without the preloaded agent (which needs
# the program's sanitizer runtime): a static program, which LD_PRELOAD
# does not touch, drops LD_PRELOAD and starts it.
SAN_SYMBOLIZER = $(shell command -v llvm-symbolizer || ls /usr/bin/llvm-symbolizer-* 2>/dev/null | head -1)
$(SAN_DIR)/bin/llvm-symbolizer: tests/integration/sanitize_symbolizer.c
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CC) -std=gnu11 $(WARN) -O1 -static -DSYMBOLIZER='"$(SAN_SYMBOLIZER)"' -o $(san_tmp) $< && \
		mv -f $(san_tmp) $@

sanitize-asan: $(SAN_DIR)/asan/libnprof.so $(SAN_PROGS:%=$(SAN_DIR)/asan/%) $(SAN_DIR)/bin/llvm-symbolizer
sanitize-tsan: $(SAN_DIR)/tsan/libnprof.so $(SAN_PROGS:%=$(SAN_DIR)/tsan/%) $(SAN_DIR)/bin/llvm-symbolizer

# The agent's test alone, at the judged 1,000 cycles of each engine and of
# alloc_storm; then the daemon's API tests against the sanitizer builds of
# nprofd (tests/integration/daemon_sanitize.sh, which only runs when
# NPROF_DAEMON_SANITIZE=1 asks it to; the daemon block below adds its
# builds to this target's prerequisites). Both run even when the first fails.
sanitize: all sanitize-asan sanitize-tsan
	ASAN_CYCLES=1000 TSAN_CYCLES=1000 STORM_CYCLES=1000 TEST_TIMEOUT=1800 \
		TESTS=agent_sanitize tests/run $(BUILD); s=$$?; \
	NPROF_DAEMON_SANITIZE=1 TEST_TIMEOUT=3600 TESTS=daemon_sanitize tests/run $(BUILD) || s=1; \
	exit $$s
.PHONY: sanitize sanitize-asan sanitize-tsan
# --- end of the agent block ----------------------------------------------------


# --- nprofd, the host daemon (docs/nprofd.8.md, docs/api.md) ---------------
# nprofd's parts are src/daemon's sub-folders (docs/design.md, "nprofd's
# parts"); all of them, without main.c, also go into the daemon's unit
# tests (tests/unit/daemon_*_test.c) and its fuzz targets.
DAEMON_SRC  := $(wildcard src/daemon/*.c src/daemon/*/*.c)
DAEMON_OBJ  := $(DAEMON_SRC:%.c=$(BUILD)/%.o)
DAEMON_MOD  := $(filter-out $(BUILD)/src/daemon/main.o,$(DAEMON_OBJ))
DAEMON_LIBS := -lmicrohttpd -lsqlite3 -ljansson -lgnutls -lpam -lcurl
NPROFD      := $(BUILD)/nprofd

$(NPROFD): $(DAEMON_OBJ) $(CORE_LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(DAEMON_OBJ) $(CORE_LIB) $(LIBS) $(DAEMON_LIBS)

$(BUILD)/tests/unit/daemon_%: tests/unit/daemon_%.c tests/unit/test.h $(DAEMON_MOD) $(CORE_LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(DAEMON_MOD) $(CORE_LIB) $(LIBS) $(DAEMON_LIBS)

# The config parser, fuzzed on its own (with the check of its [schedule] sections).
FUZZ_CONFIG_OBJ := $(BUILD)/fuzz-obj/src/daemon/core/config.o $(BUILD)/fuzz-obj/src/daemon/core/schedule_spec.o
$(BUILD)/tests/fuzz/daemon_config_fuzz: tests/fuzz/daemon_config_fuzz.c $(FUZZ_CORE) $(FUZZ_CONFIG_OBJ)
	@mkdir -p $(@D)
	$(call msg,FUZZLD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_CORE) $(FUZZ_CONFIG_OBJ) $(LIBS)

# /proc/PID/cgroup, read for a worker's container, pod and unit (src/daemon/core/identity.c).
$(BUILD)/tests/fuzz/daemon_identity_fuzz: tests/fuzz/daemon_identity_fuzz.c $(FUZZ_CORE) $(BUILD)/fuzz-obj/src/daemon/core/identity.o
	@mkdir -p $(@D)
	$(call msg,FUZZLD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_CORE) $(BUILD)/fuzz-obj/src/daemon/core/identity.o $(LIBS)

# etcd's replies, read by the registry's client (src/daemon/cluster/etcd.c).
$(BUILD)/tests/fuzz/etcd_reply_fuzz: tests/fuzz/etcd_reply_fuzz.c $(FUZZ_CORE) $(BUILD)/fuzz-obj/src/daemon/cluster/etcd.o $(BUILD)/fuzz-obj/src/daemon/core/curl_body.o
	@mkdir -p $(@D)
	$(call msg,FUZZLD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_CORE) $(BUILD)/fuzz-obj/src/daemon/cluster/etcd.o $(BUILD)/fuzz-obj/src/daemon/core/curl_body.o $(LIBS) -lcurl

# The header one daemon signs its requests to another with (src/daemon/cluster/cluster_auth.c).
$(BUILD)/tests/fuzz/cluster_header_fuzz: tests/fuzz/cluster_header_fuzz.c $(FUZZ_CORE) $(BUILD)/fuzz-obj/src/daemon/cluster/cluster_auth.o
	@mkdir -p $(@D)
	$(call msg,FUZZLD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_CORE) $(BUILD)/fuzz-obj/src/daemon/cluster/cluster_auth.o $(LIBS) -lgnutls

# The API's request handling against a private daemon, every module but
# main.c; jobs_start and jobs_run are wrapped so that nothing forks.
FUZZ_DAEMON_OBJ := $(filter-out $(BUILD)/fuzz-obj/src/daemon/main.o,$(DAEMON_SRC:%.c=$(BUILD)/fuzz-obj/%.o))
$(BUILD)/tests/fuzz/daemon_request_fuzz: tests/fuzz/daemon_request_fuzz.c $(FUZZ_CORE) $(FUZZ_DAEMON_OBJ)
	@mkdir -p $(@D)
	$(call msg,FUZZLD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -Wl,--wrap=jobs_start,--wrap=jobs_run -o $@ $< \
		$(FUZZ_DAEMON_OBJ) $(FUZZ_CORE) $(LIBS) $(DAEMON_LIBS)

# The web UI (src/daemon/ui/: HTML, JS, CSS kept as real files) is
# embedded as build/gen/ui/NAME.h (scripts/embed) and served by door/ui.c;
# editing a file regenerates its header, and -MMD then rebuilds ui.o.
UI_FILES := $(wildcard src/daemon/ui/*)
UI_H     := $(UI_FILES:src/daemon/ui/%=$(BUILD)/gen/ui/%.h)
$(BUILD)/gen/ui/%.h: src/daemon/ui/% scripts/embed
	@mkdir -p $(@D)
	$(call msg,GEN,$@)
	$(Q)scripts/embed $< > $@.tmp && mv $@.tmp $@
$(BUILD)/src/daemon/door/ui.o $(BUILD)/fuzz-obj/src/daemon/door/ui.o: $(UI_H)

# Sanitizer builds of nprofd: make sanitize-daemon-asan (ASan and UBSan)
# and make sanitize-daemon-tsan, the most threaded program in the tree
# (libmicrohttpd's thread per connection, the job supervisor, the restart
# watchers, the cluster's lease thread), from the daemon's and the core's
# sources compiled as for the agent above, into BUILD/sanitize/{asan,tsan}/.
# The TSan core is the plain tsan/obj one in an archive of its own: the
# renaming of what the agent interposes is the agent's alone. nprofd runs
# the nprof beside it: BUILD/sanitize/VARIANT/nprof points at the build's.
# tests/integration/daemon_sanitize.sh runs the daemon's API tests against
# both; `make sanitize` runs it (not `make check`: minutes).
$(SAN_DIR)/tsan/daemon/libnprof-core.a: $(call san_obj,tsan/obj,$(CORE_OBJ))
$(call san_obj,asan/obj,$(BUILD)/src/daemon/door/ui.o) $(call san_obj,tsan/obj,$(BUILD)/src/daemon/door/ui.o): $(UI_H)
$(SAN_DIR)/asan/nprofd: $(call san_obj,asan/obj,$(DAEMON_OBJ)) $(SAN_DIR)/asan/libnprof-core.a
$(SAN_DIR)/tsan/nprofd: $(call san_obj,tsan/obj,$(DAEMON_OBJ)) $(SAN_DIR)/tsan/daemon/libnprof-core.a
# -lcrypt: the sanitizers' crypt_r interceptor finds the real crypt_r once,
# at start; libcrypt loaded later (by pam_unix, at the first sign-in) would
# leave it calling address 0. Linked in, libcrypt is there from the start.
$(SAN_DIR)/%/nprofd:
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(SAN_CC) $(SAN_$*) -pthread -o $(san_tmp) $(filter %.o,$^) $(filter %.a,$^) \
		$(LIBS) $(DAEMON_LIBS) -Wl,--no-as-needed -lcrypt && mv -f $(san_tmp) $@
$(SAN_DIR)/%/nprof:
	@mkdir -p $(@D)
	$(Q)ln -sfn ../../nprof $@

sanitize-daemon-asan: $(SAN_DIR)/asan/nprofd $(SAN_DIR)/asan/nprof $(SAN_DIR)/bin/llvm-symbolizer
sanitize-daemon-tsan: $(SAN_DIR)/tsan/nprofd $(SAN_DIR)/tsan/nprof $(SAN_DIR)/bin/llvm-symbolizer
sanitize: sanitize-daemon-asan sanitize-daemon-tsan
.PHONY: sanitize-daemon-asan sanitize-daemon-tsan

daemon: $(NPROFD)
all: $(NPROFD)
.PHONY: daemon
# --- end of the daemon block ---------------------------------------------------

include tests/progs/progs.mk

check: all
	tests/run $(BUILD)

# The suite as on a CPU four times faster, then four times slower: every
# test workload's chunk of work scaled (tests/progs/work.h). Both must pass.
check-speed: all
	NPROF_TEST_WORK_SCALE=0.25 tests/run $(BUILD); s=$$?; \
	NPROF_TEST_WORK_SCALE=4 tests/run $(BUILD) || s=1; exit $$s
.PHONY: check-speed

run: 
	scripts/install-deps --build --if-missing
	$(MAKE) $(NPROF) $(NPROFD) progs
	scripts/demo $(BUILD)

# Every bench runs even when one before it fails; the status says whether any did.
bench: all
	bench/record-overhead $(BUILD); s=$$?; bench/dwarf-overhead $(BUILD) || s=1; \
	bench/agent-overhead $(BUILD) || s=1; bench/alloc-overhead $(BUILD) || s=1; bench/daemon $(BUILD) || s=1; \
	bench/compare $(BUILD) || s=1; exit $$s

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
