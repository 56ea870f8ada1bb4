# Test and demo programs: tests/progs/*.c built with frame pointers (and
# whatever special variants a test needs, below). Ground truth they compute
# themselves goes to the file named by their --truth option.
PROGS_CFLAGS := -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread
PROGS_SRC    := $(wildcard tests/progs/*.c)
PROGS_BIN    := $(PROGS_SRC:%.c=$(BUILD)/%)

$(BUILD)/tests/progs/%: tests/progs/%.c
	@mkdir -p $(@D)
	$(CC) $(PROGS_CFLAGS) -o $@ $< -ldl -lm

progs: $(PROGS_BIN)
