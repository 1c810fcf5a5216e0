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
