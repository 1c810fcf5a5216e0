# tests/bench/cuda.mk: the GPU benchmarks. Never built by `make`, `make test` or `make bench`
# (they need the CUDA toolkit, and a GPU to run); only by the targets below.
#
#   make bench-cuda-progs  bench-cuda, bench-cuda-ckpt, bench-cuda-native-target,
#                          bench-cuda-background, bench-cuda-incremental,
#                          bench-cuda-interrupt and their kernels (bench_kernels.fatbin)
#                          in $(BUILD)/tests/
#   make bench-gpu         runs bench-cuda, then bench-cuda-ckpt (8 GiB, 3 runs by default),
#                          then bench-cuda-background (the same), then
#                          bench-cuda-incremental (the same, 5% changed, chains of 5), then
#                          bench-cuda-interrupt (a 60 s kernel); BENCH_CUDA_ARGS,
#                          BENCH_CUDA_CKPT_ARGS, BENCH_CUDA_BG_ARGS, BENCH_CUDA_INCR_ARGS and
#                          BENCH_CUDA_INT_ARGS pass options
#   make bench-gpu-soft    all three on the software CUDA device (tests/softcuda), small: tries
#                          the programs where there is no GPU; its figures mean nothing
#
# CUDA_HOME, NVCC and CUDA_ARCHS (nvcc -gencode options) are yours to set.

CUDA_HOME ?= /usr/local/cuda
CUDA_INCLUDE ?= $(CUDA_HOME)/include
NVCC ?= $(CUDA_HOME)/bin/nvcc
CUDA_ARCHS ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90

BENCH_CUDA := $(BUILD)/tests/bench-cuda
BENCH_CUDA_CKPT := $(BUILD)/tests/bench-cuda-ckpt
BENCH_CUDA_TARGET := $(BUILD)/tests/bench-cuda-native-target
BENCH_CUDA_BG := $(BUILD)/tests/bench-cuda-background
BENCH_CUDA_INT := $(BUILD)/tests/bench-cuda-interrupt
BENCH_CUDA_INCR := $(BUILD)/tests/bench-cuda-incremental
BENCH_CUDA_FATBIN := $(BUILD)/tests/bench_kernels.fatbin
BENCH_CUDA_OBJ := $(BUILD)/obj/tests/bench
BENCH_CUDA_OBJS := $(BENCH_CUDA_OBJ)/bench_cuda.o $(BENCH_CUDA_OBJ)/bench_cuda_ckpt.o \
	$(BENCH_CUDA_OBJ)/bench_cuda_native_target.o $(BENCH_CUDA_OBJ)/bench_cuda_data.o \
	$(BENCH_CUDA_OBJ)/bench_cuda_background.o $(BENCH_CUDA_OBJ)/bench_cuda_interrupt.o \
	$(BENCH_CUDA_OBJ)/bench_cuda_incremental.o
BENCH_CUDA_ARGS ?=
BENCH_CUDA_CKPT_ARGS ?=
BENCH_CUDA_BG_ARGS ?=
BENCH_CUDA_INT_ARGS ?=
BENCH_CUDA_INCR_ARGS ?=

$(BENCH_CUDA_OBJS): SC_CFLAGS += -I$(CUDA_INCLUDE)
$(BENCH_CUDA_OBJS): | $(CUDA_INCLUDE)/cuda.h

$(BENCH_CUDA_FATBIN): tests/bench/bench_kernels.cu tests/bench/cuda.mk \
		$(PUBLIC_INCLUDE)/selfckpt_kernel.h
	@command -v $(NVCC) > /dev/null 2>&1 || { echo "bench-cuda-progs: no nvcc at" \
		"NVCC=$(NVCC): install the CUDA toolkit, or set NVCC or CUDA_HOME" >&2; exit 1; }
	$(Q)mkdir -p $(@D)
	$(call quiet,NVCC,$<)$(NVCC) --fatbin $(CUDA_ARCHS) -I$(PUBLIC_INCLUDE) -o $@ $<

# Loads the driver's libcuda and libselfckpt itself (dlopen): linked with neither.
$(BENCH_CUDA): $(BENCH_CUDA_OBJ)/bench_cuda.o $(BENCH_DATA)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ -ldl

# libselfckpt provides the cu* entry points: never -lcuda here.
$(BENCH_CUDA_CKPT): $(BENCH_CUDA_OBJ)/bench_cuda_ckpt.o $(BENCH_CUDA_OBJ)/bench_cuda_data.o \
		$(BENCH_DATA) $(BUILD)/lib/libselfckpt.so
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) \
		-L$(BUILD)/lib -lselfckpt -Wl,-rpath,'$$ORIGIN/../lib' -ldl -lpthread

$(BENCH_CUDA_BG): $(BENCH_CUDA_OBJ)/bench_cuda_background.o $(BENCH_CUDA_OBJ)/bench_cuda_data.o \
		$(BENCH_DATA) $(BUILD)/lib/libselfckpt.so
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) \
		-L$(BUILD)/lib -lselfckpt -Wl,-rpath,'$$ORIGIN/../lib' -lpthread

$(BENCH_CUDA_INCR): $(BENCH_CUDA_OBJ)/bench_cuda_incremental.o $(BENCH_CUDA_OBJ)/bench_cuda_data.o \
		$(BENCH_DATA) $(BUILD)/lib/libselfckpt.so
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) \
		-L$(BUILD)/lib -lselfckpt -Wl,-rpath,'$$ORIGIN/../lib'

$(BENCH_CUDA_INT): $(BENCH_CUDA_OBJ)/bench_cuda_interrupt.o $(BENCH_CUDA_OBJ)/bench_cuda_data.o \
		$(BUILD)/lib/libselfckpt.so
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) \
		-L$(BUILD)/lib -lselfckpt -Wl,-rpath,'$$ORIGIN/../lib' -lpthread

# The stub only resolves the symbols; the driver's libcuda.so.1 runs them.
$(BENCH_CUDA_TARGET): $(BENCH_CUDA_OBJ)/bench_cuda_native_target.o \
		$(BENCH_CUDA_OBJ)/bench_cuda_data.o
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ \
		-L$(CUDA_HOME)/lib64/stubs -lcuda

.PHONY: bench-cuda-progs bench-gpu bench-cuda-soft bench-gpu-soft
ifeq ($(SAN),1)
bench-cuda-progs bench-gpu bench-cuda-soft bench-gpu-soft:
	$(Q)$(MAKE) --no-print-directory SAN= BUILD=$(PLAIN_BUILD) $@
else
bench-cuda-progs: $(BENCH_CUDA) $(BENCH_CUDA_CKPT) $(BENCH_CUDA_TARGET) $(BENCH_CUDA_BG) \
	$(BENCH_CUDA_INCR) $(BENCH_CUDA_INT) $(BENCH_CUDA_FATBIN)

# The library, the restorer and the GPU proxy, besides the programs.
bench-gpu: bench-cuda-progs lib tools
	$(Q)$(BENCH_CUDA) $(BENCH_CUDA_ARGS)
	$(Q)$(BENCH_CUDA_CKPT) $(BENCH_CUDA_CKPT_ARGS)
	$(Q)$(BENCH_CUDA_BG) $(BENCH_CUDA_BG_ARGS)
	$(Q)$(BENCH_CUDA_INCR) $(BENCH_CUDA_INCR_ARGS)
	$(Q)$(BENCH_CUDA_INT) $(BENCH_CUDA_INT_ARGS)

# The software device: the kernels as host functions and a module text naming them; the
# native target finds the device as libcuda.so.1 in $(BUILD)/tests/softlib.
BENCH_SOFT_KERNELS := $(BUILD)/tests/libbench-kernels-soft.so
BENCH_SOFT_MODULE := $(BUILD)/tests/bench_kernels.softmod
BENCH_SOFT_LIBDIR := $(BUILD)/tests/softlib

$(BENCH_SOFT_KERNELS): tests/bench/bench_kernels_soft.c tests/softcuda/softcuda.h
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$@)$(CC) $(CPPFLAGS) -std=gnu11 -Wall -Wextra -Wshadow -fPIC \
		-fvisibility=hidden -Itests/softcuda $(CFLAGS) -shared $(LDFLAGS) -o $@ $<

$(BENCH_SOFT_MODULE): tests/bench/cuda.mk
	$(Q)mkdir -p $(@D)
	$(call quiet,GEN,$@)printf '%s\n' '.version 8.0' '.target sm_90' \
		'// softcuda library $(abspath $(BENCH_SOFT_KERNELS))' '.entry bench_fill (8, 8, 8)' \
		'.entry bench_checksum (8, 8, 8, 8)' '.entry bench_compute (8, 4)' \
		'.entry bench_empty ()' '.entry bench_stencil (8, 8, 4, 4)' \
		'.entry bench_items (8, 8, 8)' > $@

bench-cuda-soft: bench-cuda-progs $(SOFTCUDA_LIB) $(BENCH_SOFT_KERNELS) $(BENCH_SOFT_MODULE)
	$(Q)mkdir -p $(BENCH_SOFT_LIBDIR)
	$(Q)ln -sf ../libsoftcuda.so.1 $(BENCH_SOFT_LIBDIR)/libcuda.so.1

bench-gpu-soft: bench-cuda-soft lib tools
	$(Q)SELFCKPT_LIBCUDA=$(abspath $(SOFTCUDA_LIB)) $(BENCH_CUDA) --runs 1 --mib 16 \
		--libcuda $(abspath $(SOFTCUDA_LIB)) --module $(BENCH_SOFT_MODULE) $(BENCH_CUDA_ARGS)
	$(Q)SELFCKPT_LIBCUDA=$(abspath $(SOFTCUDA_LIB)) \
		LD_LIBRARY_PATH=$(abspath $(BENCH_SOFT_LIBDIR))$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH} \
		$(BENCH_CUDA_CKPT) --runs 1 --gib 0.0625 --libcuda $(abspath $(SOFTCUDA_LIB)) \
		--module $(BENCH_SOFT_MODULE) $(BENCH_CUDA_CKPT_ARGS)
	$(Q)SELFCKPT_LIBCUDA=$(abspath $(SOFTCUDA_LIB)) $(BENCH_CUDA_BG) --runs 1 --gib 0.0625 \
		--module $(BENCH_SOFT_MODULE) $(BENCH_CUDA_BG_ARGS)
	$(Q)SELFCKPT_LIBCUDA=$(abspath $(SOFTCUDA_LIB)) $(BENCH_CUDA_INCR) --runs 1 --gib 0.0625 \
		--module $(BENCH_SOFT_MODULE) $(BENCH_CUDA_INCR_ARGS)
	$(Q)SELFCKPT_LIBCUDA=$(abspath $(SOFTCUDA_LIB)) $(BENCH_CUDA_INT) --seconds 2 --item-ms 5 \
		--module $(BENCH_SOFT_MODULE) $(BENCH_CUDA_INT_ARGS)
endif
