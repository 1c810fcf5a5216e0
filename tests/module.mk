# tests/: the Criterion suite. One binary runs every test, each in its own process.
TEST_SRCS := \
	tests/compress/test_chunk.c \
	tests/compress/test_pool.c \
	tests/format/test_roundtrip.c

TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_BIN := $(BUILD)/tests/selfckpt-tests
TEST_JOBS ?= 2

$(TEST_OBJS): | $(TEST_DEPS_STAMP)

$(TEST_BIN): $(TEST_OBJS) $(LIB_A)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ -lcriterion $(SC_LDLIBS)

test: $(TEST_DEPS_STAMP) $(TEST_BIN) tools
	$(Q)SELFCKPT_BUILD=$(BUILD) $(TEST_BIN) --jobs $(TEST_JOBS) $(TEST_ARGS)

# bench: throughput of the image writer and reader (prints figures; asserts nothing).
# BENCH_ARGS: e.g. --mib 256 --runs 3 --dir /mnt/fast.
# The Makefile sets LIB_A only after including this file, and prerequisites expand at once,
# so the archive is named here.
BENCH_FORMAT := $(BUILD)/tests/bench-format

$(BENCH_FORMAT): $(BUILD)/obj/tests/bench/bench_format.o $(BUILD)/lib/libselfckpt.a
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ $(SC_LDLIBS)

bench: $(BENCH_FORMAT)
	$(Q)$(BENCH_FORMAT) $(BENCH_ARGS)
