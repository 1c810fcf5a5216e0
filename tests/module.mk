# tests/: the Criterion suite. One binary runs every test, each in its own process.
TEST_SRCS := \
	tests/cli/test_ckside.c \
	tests/cli/test_build.c \
	tests/cli/test_deploy.c \
	tests/cli/test_inspect.c \
	tests/cli/test_exec.c \
	tests/cli/test_instant.c \
	tests/cli/test_memory.c \
	tests/cli/test_objects.c \
	tests/cli/test_sysvipc.c \
	tests/cli/trip.c \
	tests/cli/test_real_programs.c \
	tests/cli/test_run.c \
	tests/cli/test_trees.c \
	tests/cli/test_timers.c \
	tests/compress/test_chunk.c \
	tests/compress/test_pool.c \
	tests/core/test_fd_index.c \
	tests/core/test_job_set.c \
	tests/core/test_unix_flight.c \
	tests/core/test_fd_objects.c \
	tests/core/test_fd_rights.c \
	tests/core/test_fds.c \
	tests/core/test_fd_share.c \
	tests/core/test_fds_many.c \
	tests/core/test_tool_path.c \
	tests/core/test_maps.c \
	tests/core/roundtrip_harness.c \
	tests/core/test_pages.c \
	tests/core/test_written.c \
	tests/core/chain_harness.c \
	tests/core/test_incremental.c tests/core/test_lent_settings.c \
	tests/core/test_merge.c \
	tests/core/test_background.c \
	tests/core/test_restored_process.c \
	tests/core/test_restored_mappings.c \
	tests/core/test_settings.c \
	tests/core/test_sock_defaults.c \
	tests/core/test_hold.c \
	tests/core/test_stop.c \
	tests/core/test_locks_record.c \
	tests/core/test_sysv_record.c \
	tests/core/test_timers_record.c \
	tests/core/test_vmflags.c \
	tests/core/test_segment_vmflags.c \
	tests/core/test_copier_split.c \
	tests/format/test_array.c \
	tests/format/test_atomic.c \
	tests/format/test_errors.c \
	tests/format/test_golden.c \
	tests/format/test_roundtrip.c \
	tests/format/test_spec_misc.c \
	tests/format/test_spec_seg.c \
	tests/format/test_spec_parent.c \
	tests/format/test_truncation.c \
	tests/format/test_writer.c \
	tests/cuda/test_module_info.c
# The CUDA part's tests: built where it is (WITH_CUDA, see the Makefile), on the software
# CUDA device (tests/softcuda/).
TEST_CUDA_SRCS := \
	tests/cli/test_cuda_tools.c \
	tests/cli/test_driver.c \
	tests/cuda/cuda_api_harness.c \
	tests/cuda/test_cuda_api.c \
	tests/cuda/test_cuda_graph.c \
	tests/cuda/test_cuda_peer.c tests/cuda/test_cuda_managed.c tests/cuda/test_cuda_capture.c tests/cuda/test_cuda_resumable.c \
	tests/cuda/test_cuda_roundtrip.c \
	tests/cuda/test_cuda_chain.c \
	tests/cuda/test_cuda_samples.c \
	tests/cuda/test_driver_record.c \
	tests/cuda/test_driver_refused.c \
	tests/cuda/test_errors.c \
	tests/cuda/test_spec_dev.c
include tests/cuda/fixtures/module.mk
ifeq ($(WITH_CUDA),1)
TEST_SRCS += $(TEST_CUDA_SRCS)
include tests/softcuda/module.mk
endif

TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_BIN := $(BUILD)/tests/selfckpt-tests
TEST_JOBS ?= 2

$(TEST_OBJS): | $(TEST_DEPS_STAMP)

$(TEST_BIN): $(TEST_OBJS) $(BUILD)/lib/libselfckpt.a
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ -lcriterion $(SC_LDLIBS)

ifeq ($(SAN),1)
test-processes:
	$(Q)$(MAKE) --no-print-directory SAN= BUILD=$(PLAIN_BUILD) tools test-progs
else
test-processes: tools test-progs
endif
.PHONY: test-processes test-progs
test-progs:

# counter: the program tests/cli/test_run.c runs under selfckpt-run; plain, without the library.
test-progs: $(BUILD)/tests/progs/counter
$(BUILD)/tests/progs/counter: tests/progs/counter.c
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(CC) $(CPPFLAGS) -Wall -Wextra $(CFLAGS) -o $@ $<

# Programs that know nothing of selfckpt, run under selfckpt-run by tests/cli/test_instant.c
# and test_objects.c.
RUN_PROG_NAMES := hashcopy sigblock evtimer shmfile shmcount objects sockets unrestorable procattrs locks timers
RUN_PROG_NAMES += madvise memfiles guards sysvipc rights manyfds
RUN_PROG_NAMES += rtdriver tree_sysv sigchld_pending sigowner execwrite
test-progs: $(RUN_PROG_NAMES:%=$(BUILD)/tests/progs/%)
$(RUN_PROG_NAMES:%=$(BUILD)/tests/progs/%): $(BUILD)/tests/progs/%: tests/progs/%.c
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(CC) $(CPPFLAGS) -Wall -Wextra $(CFLAGS) -o $@ $< -lpthread -lrt
# the programs that print their mappings' settings share how they read them
$(BUILD)/tests/progs/madvise $(BUILD)/tests/progs/advised: tests/progs/smaps_settings.h

# tests/cli/test_deploy.c: the sandbox that makes each setting, and a program with or without
# threads; both know nothing of selfckpt.
DEPLOY_PROG_NAMES := sandbox workers
test-progs: $(DEPLOY_PROG_NAMES:%=$(BUILD)/tests/progs/%)
$(DEPLOY_PROG_NAMES:%=$(BUILD)/tests/progs/%): $(BUILD)/tests/progs/%: tests/progs/%.c
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(CC) $(CPPFLAGS) -Wall -Wextra $(CFLAGS) -o $@ $< -lpthread

# LeakSanitizer: Criterion's runner keeps a few bytes it never frees.
test: $(TEST_DEPS_STAMP) $(TEST_BIN) test-processes
	$(Q)LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
		SELFCKPT_BUILD=$(PLAIN_BUILD) $(TEST_BIN) --jobs $(TEST_JOBS) $(TEST_ARGS)

# bench: throughput of the image writer and reader (prints figures; asserts nothing).
# BENCH_ARGS: e.g. --mib 256 --runs 3 --dir /mnt/fast.
# The Makefile sets LIB_A only after including this file, and prerequisites expand at once,
# so the archive is named here.
BENCH_FORMAT := $(BUILD)/tests/bench-format
# bench_data.o: the data sets and the median, shared by every benchmark program.
BENCH_DATA := $(BUILD)/obj/tests/bench/bench_data.o

$(BENCH_FORMAT): $(BUILD)/obj/tests/bench/bench_format.o $(BENCH_DATA) $(BUILD)/lib/libselfckpt.a
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ $(SC_LDLIBS)

bench: $(BENCH_FORMAT)
	$(Q)$(BENCH_FORMAT) $(BENCH_ARGS)
	$(Q)$(MAKE) --no-print-directory SAN= BUILD=$(PLAIN_BUILD) bench-ckpt bench-fds bench-tree \
		bench-incremental

# golden: the images of tests/golden/ (committed; see its README.md). Regenerate them only
# when the format changes: `make golden`, then check the offsets test_golden.c expects.
MKGOLDEN := $(BUILD)/tests/mkgolden

$(MKGOLDEN): $(BUILD)/obj/tests/golden/mkgolden.o $(BUILD)/lib/libselfckpt.a
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ $(SC_LDLIBS)

.PHONY: golden
golden: $(MKGOLDEN)
	$(Q)rm -rf tests/golden/good tests/golden/broken
	$(Q)mkdir -p tests/golden/good tests/golden/broken
	$(Q)$(MKGOLDEN) tests/golden

# fuzz: libFuzzer (clang) with ASan and UBSan, in $(BUILD)/fuzz/: fuzz_reader on the image
# reader, and one target per record decoder that selfckpt-restore and selfckpt-inspect run
# (fuzz_process, ..., fuzz_timers: tests/fuzz/fuzz_records.c).
#   make fuzz-build  the targets and their seeds ($(BUILD)/fuzz/seeds/: the golden images, and
#                    images the test programs write), to run here or on a bigger machine with
#                    tests/fuzz/run-all.sh BUILD SECONDS JOBS
#   make fuzz        fuzz-build, then every target for FUZZ_SECONDS (300) in turn; a crash
#                    leaves $(BUILD)/fuzz/out/<target>/crash-* and fails
FUZZ_DIR := $(PLAIN_BUILD)/fuzz
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 300
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := $(filter-out -fsanitize=% -fno-sanitize-recover=% -fno-omit-frame-pointer,\
	$(SC_CFLAGS)) $(TEST_INCLUDES) -I$(CUDA_INCLUDE) $(FUZZ_SAN) -fsanitize=fuzzer-no-link
FUZZ_RECORDS := process thread segment fd signals cuda_log devmem timers locks sysv
FUZZ_BINS := $(FUZZ_DIR)/fuzz_reader $(FUZZ_RECORDS:%=$(FUZZ_DIR)/fuzz_%)
# The library and the tools' readers, in an archive: each target links what it uses.
# selfckpt-inspect's main() is called in-process, renamed.
FUZZ_LIB := $(FUZZ_DIR)/libselfckpt-fuzz.a
FUZZ_LIB_SRCS := $(LIB_SRCS) $(LIB_A_SRCS) cli/tool.c cli/inspect.c core/restore/restore_load.c
FUZZ_SEED := $(FUZZ_DIR)/fuzz_seed

$(FUZZ_DIR)/obj/%.o: %.c | $(DEPS_STAMP) $(CUDA_INCLUDE)/cuda.h
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) $(CFLAGS) -c -o $@ $<

$(FUZZ_DIR)/obj/cli/inspect.o: FUZZ_CFLAGS += -Dmain=sc_inspect_main

# fuzz_records.c, once per record type.
$(FUZZ_RECORDS:%=$(FUZZ_DIR)/obj/records/%.o): $(FUZZ_DIR)/obj/records/%.o: \
		tests/fuzz/fuzz_records.c | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$@)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) $(CFLAGS) -DFUZZ_TARGET=$* \
		-c -o $@ $<

$(FUZZ_LIB): $(FUZZ_LIB_SRCS:%.c=$(FUZZ_DIR)/obj/%.o)
	$(call quiet,AR,$@)rm -f $@ && $(AR) rcs $@ $^

$(FUZZ_DIR)/fuzz_reader: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_reader.o $(FUZZ_LIB)
$(FUZZ_RECORDS:%=$(FUZZ_DIR)/fuzz_%): $(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/obj/records/%.o $(FUZZ_LIB)
$(FUZZ_BINS):
	$(call quiet,LD,$@)$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer $(LDFLAGS) -o $@ $^ \
		$(SC_LDLIBS)

$(FUZZ_SEED): $(FUZZ_DIR)/obj/tests/fuzz/fuzz_seed.o $(FUZZ_LIB)
	$(call quiet,LD,$@)$(FUZZ_CC) $(FUZZ_SAN) $(LDFLAGS) -o $@ $^ $(SC_LDLIBS)

# The seeds come from images the plain build's test programs write of themselves.
.PHONY: fuzz-build fuzz-seeds
fuzz-seeds: $(FUZZ_SEED) test-processes
	$(Q)sh tests/fuzz/make-seeds.sh $(PLAIN_BUILD)

fuzz-build: $(FUZZ_BINS) fuzz-seeds

fuzz: fuzz-build
	$(Q)sh tests/fuzz/run-all.sh $(PLAIN_BUILD) $(FUZZ_SECONDS) 1

# Round-trip test programs (tests/progs/, run by tests/core/test_roundtrip*.c): each is its own
# process that checkpoints itself, linked with the static library. Like every checkpointed
# process they come from the plain build (test-processes, PLAIN_BUILD in the Makefile).
PROG_NAMES := advised badsave blocked churn clock dlopen failsave fdrace files growth heap lineage mapfile mappings procstate signals \
	threads tlsmisc

test-progs: $(PROG_NAMES:%=$(BUILD)/tests/progs/%)

$(PROG_NAMES:%=$(BUILD)/tests/progs/%): $(BUILD)/tests/progs/%: tests/progs/%.c tests/progs/prog.h \
		$(BUILD)/lib/libselfckpt.a | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(CPPFLAGS) $(TEST_INCLUDES) $(SC_CFLAGS) $(CFLAGS) -o $@ $< \
		$(BUILD)/lib/libselfckpt.a $(SC_LDLIBS) -ldl

ifeq ($(WITH_CUDA),1)
# rtdriver-linked (tests/cli/test_driver.c): rtdriver linked with libcuda.so.1, as -lcuda links.
test-progs: $(BUILD)/tests/progs/rtdriver-linked
$(BUILD)/tests/progs/rtdriver-linked: tests/progs/rtdriver.c $(SOFTCUDA_DRIVER)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(CPPFLAGS) -Wall -Wextra $(CFLAGS) -o $@ $< \
		-L$(dir $(SOFTCUDA_DRIVER)) -Wl,--no-as-needed -l:libcuda.so.1 -ldl

# rtstatic (tests/cli/test_driver.c): linked as `pkg-config --static` links a program.
test-progs: $(BUILD)/tests/progs/rtstatic
$(BUILD)/tests/progs/rtstatic: tests/progs/rtstatic.c $(BUILD)/lib/libselfckpt.a | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(CPPFLAGS) $(TEST_INCLUDES) $(SC_CFLAGS) $(CFLAGS) -o $@ $< $(PC_STATIC_FLAGS) \
		$(BUILD)/lib/libselfckpt.a $(SC_LDLIBS) -ldl

# static_sleep (tests/cli/trees.sh): a process the library cannot enter.
test-progs: $(BUILD)/tests/progs/static_sleep
$(BUILD)/tests/progs/static_sleep: tests/progs/static_sleep.c
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) -Wall -Wextra $(CFLAGS) -static -o $@ $<

# The CUDA samples on the software device (tests/cuda/test_cuda_samples.c), where nvcc is.
ifneq ($(shell command -v $(NVCC) 2> /dev/null),)
test-progs: cuda-samples cuda-soft-samples
endif

# cuda_state: GPU state across a checkpoint, run on the software CUDA device (tests/softcuda)
# through the proxy; its kernels are host functions in a library of their own.
CUDA_PROG := $(BUILD)/tests/progs/cuda_state
CUDA_PROG_KERNELS := $(BUILD)/tests/progs/libcuda-kernels.so
test-progs: $(CUDA_PROG) $(CUDA_PROG_KERNELS)

$(CUDA_PROG): tests/progs/cuda_state.c tests/progs/prog.h $(BUILD)/lib/libselfckpt.a \
		| $(DEPS_STAMP) $(CUDA_INCLUDE)/cuda.h
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(CPPFLAGS) $(TEST_INCLUDES) $(SC_CFLAGS) -I$(CUDA_INCLUDE) $(CFLAGS) -o $@ $< \
		$(BUILD)/lib/libselfckpt.a $(SC_LDLIBS) -ldl

$(CUDA_PROG_KERNELS): tests/progs/cuda_kernels.c tests/softcuda/softcuda.h $(SOFTCUDA_LIB) \
		$(PUBLIC_INCLUDE)/selfckpt_kernel.h
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) -shared -fPIC -std=gnu11 -Wall -Wextra -Itests/softcuda \
		-I$(PUBLIC_INCLUDE) -I$(CUDA_INCLUDE) $(CFLAGS) \
		-o $@ $< -L$(BUILD)/tests -l:libsoftcuda.so.1 -Wl,-rpath,$(abspath $(BUILD)/tests)
endif

# bench-ckpt: checkpoint and restart of a whole process (ckpt-subject) against the write
# floor and the read-back of its image; `make bench` runs it after bench-format. The subject
# is checkpointed and restored, so it and everything here come from the plain build.
BENCH_CKPT := $(BUILD)/tests/bench-ckpt
CKPT_SUBJECT := $(BUILD)/tests/ckpt-subject

$(BENCH_CKPT): $(BUILD)/obj/tests/bench/bench_ckpt.o $(BENCH_DATA)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ -lpthread

$(CKPT_SUBJECT): $(BUILD)/obj/tests/bench/ckpt_subject.o $(BENCH_DATA) $(BUILD)/lib/libselfckpt.a
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ $(SC_LDLIBS)

# bench-fds: what 10,000 descriptors of mixed kinds add to a checkpoint and a restore.
BENCH_FDS := $(BUILD)/tests/bench-fds

$(BENCH_FDS): $(BUILD)/obj/tests/bench/bench_fds.o $(BENCH_DATA) $(BUILD)/lib/libselfckpt.a
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ $(SC_LDLIBS)

# bench-incremental: a checkpoint after a small change, and a restart from a chain (spec §9.14).
BENCH_INCR := $(BUILD)/tests/bench-incremental

$(BENCH_INCR): $(BUILD)/obj/tests/bench/bench_incremental.o $(BENCH_DATA) $(BUILD)/lib/libselfckpt.a
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ $(SC_LDLIBS)

# bench-tree: a job of 8 processes of 256 MiB against one process of 2 GiB.
BENCH_TREE := $(BUILD)/tests/bench-tree
TREE_SUBJECT := $(BUILD)/tests/tree-subject

$(BENCH_TREE): $(BUILD)/obj/tests/bench/bench_tree.o $(BENCH_DATA)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^

$(TREE_SUBJECT): $(BUILD)/obj/tests/bench/tree_subject.o $(BENCH_DATA)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^

.PHONY: bench-ckpt bench-fds bench-tree bench-incremental
ifeq ($(SAN),1)
bench-ckpt bench-fds bench-tree bench-incremental:
	$(Q)$(MAKE) --no-print-directory SAN= BUILD=$(PLAIN_BUILD) $@
else
bench-tree: $(BENCH_TREE) $(TREE_SUBJECT) $(BUILD)/bin/selfckpt-restore $(BUILD)/bin/selfckpt-run \
		$(BUILD)/lib/libselfckpt.so.1
	$(Q)$(BENCH_TREE) $(BENCH_TREE_ARGS)
bench-ckpt: $(BENCH_CKPT) $(CKPT_SUBJECT) $(BUILD)/bin/selfckpt-restore
	$(Q)$(BENCH_CKPT) $(BENCH_ARGS)
bench-fds: $(BENCH_FDS) $(BUILD)/bin/selfckpt-restore
	$(Q)$(BENCH_FDS) $(BENCH_FDS_ARGS)
bench-incremental: $(BENCH_INCR) $(BUILD)/bin/selfckpt-restore $(BUILD)/bin/selfckpt-merge
	$(Q)$(BENCH_INCR) $(BENCH_INCR_ARGS)
endif
$(BUILD)/obj/tests/cuda/%.o: SC_CFLAGS += -I$(CUDA_INCLUDE)
include tests/bench/cuda.mk
