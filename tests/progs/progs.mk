# Test and demo programs: tests/progs/*.c built with frame pointers (and
# whatever special variants a test needs, below). Ground truth they compute
# themselves goes to the file named by their --truth option.
PROGS_CFLAGS   := -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread
PROGS_CXXFLAGS := $(PROGS_CFLAGS) -std=gnu++17
PROGS_DIR      := $(BUILD)/tests/progs
# Every program includes both (progs.h includes work.h).
PROGS_HDR      := tests/progs/progs.h tests/progs/work.h

# Sources with a rule of their own below are not plain programs.
PROGS_SPECIAL  := tests/progs/libhot.c tests/progs/libslowinit.c tests/progs/debuglink.c
PROGS_SRC      := $(filter-out $(PROGS_SPECIAL),$(wildcard tests/progs/*.c))
PROGS_CXX_SRC  := $(wildcard tests/progs/*.cpp)
PROGS_BIN      := $(PROGS_SRC:%.c=$(BUILD)/%) $(PROGS_CXX_SRC:%.cpp=$(BUILD)/%)
PROGS_EXTRA    := $(PROGS_DIR)/libhot.so $(PROGS_DIR)/libslowinit.so \
                  $(PROGS_DIR)/static_spin $(PROGS_DIR)/debuglink \
                  $(PROGS_DIR)/debuglink.debug $(PROGS_DIR)/alloc_route_now

$(BUILD)/tests/progs/%: tests/progs/%.c $(PROGS_HDR)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(PROGS_CFLAGS) -o $@ $< -ldl -lm

$(BUILD)/tests/progs/%: tests/progs/%.cpp $(PROGS_HDR)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CXX) $(PROGS_CXXFLAGS) -o $@ $< -lm

# The library dlopen_host loads at run time (found next to the host).
$(PROGS_DIR)/libhot.so: tests/progs/libhot.c $(PROGS_HDR)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(PROGS_CFLAGS) -fPIC -shared -o $@ $<

# The library nprof attach's test loads instead of the agent (attach.sh).
$(PROGS_DIR)/libslowinit.so: tests/progs/libslowinit.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(PROGS_CFLAGS) -fPIC -shared -o $@ $<

# alloc_route bound at load (-z now): its PLT slots in read-only RELRO
# pages, which the agent's routing must make writable for the switch.
$(PROGS_DIR)/alloc_route_now: tests/progs/alloc_route.c $(PROGS_HDR)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(PROGS_CFLAGS) -Wl,-z,relro,-z,now -o $@ $< -ldl -lm

# A static binary: no dynamic loader, which nprof attach must refuse.
$(PROGS_DIR)/static_spin: tests/progs/spin.c $(PROGS_HDR)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(PROGS_CFLAGS) -static -o $@ $< -lm

# A binary with no symbol table at all: symbols and DWARF live in
# debuglink.debug, found through .gnu_debuglink (same directory). The
# unstripped link goes to a temporary name so that a failed step leaves no
# half-made binary behind.
$(PROGS_DIR)/debuglink $(PROGS_DIR)/debuglink.debug &: tests/progs/debuglink.c $(PROGS_HDR)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(PROGS_CFLAGS) -o $(PROGS_DIR)/debuglink.full $<
	objcopy --only-keep-debug $(PROGS_DIR)/debuglink.full $(PROGS_DIR)/debuglink.debug
	strip --strip-all -o $(PROGS_DIR)/debuglink.stripped $(PROGS_DIR)/debuglink.full
	cd $(PROGS_DIR) && objcopy --add-gnu-debuglink=debuglink.debug debuglink.stripped
	mv $(PROGS_DIR)/debuglink.stripped $(PROGS_DIR)/debuglink
	rm -f $(PROGS_DIR)/debuglink.full

# The same programs without frame pointers, as distributions build them:
# only DWARF CFI (.eh_frame) tells an unwinder where the callers are.
# -DNPROF_NOFP turns KEEP_FRAME() off (progs.h).
PROGS_NOFP_CFLAGS   := -O2 -g -fomit-frame-pointer -DNPROF_NOFP -pthread
PROGS_NOFP_CXXFLAGS := $(PROGS_NOFP_CFLAGS) -std=gnu++17
PROGS_NOFP_NAMES    := split qsort_burn cxx_sort syscalls threads_zoo spin eight_threads wall_split wall_crowd
PROGS_NOFP          := $(PROGS_NOFP_NAMES:%=$(PROGS_DIR)/nofp/%)

$(PROGS_DIR)/nofp/%: tests/progs/%.c $(PROGS_HDR)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(PROGS_NOFP_CFLAGS) -o $@ $< -ldl -lm

$(PROGS_DIR)/nofp/%: tests/progs/%.cpp $(PROGS_HDR)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CXX) $(PROGS_NOFP_CXXFLAGS) -o $@ $< -lm

progs: $(PROGS_BIN) $(PROGS_EXTRA) $(PROGS_NOFP)
