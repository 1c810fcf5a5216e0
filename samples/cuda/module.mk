# samples/cuda/: CUDA Driver API samples, their kernels, and the GPU test.
# Not part of `make all`, which must build where no CUDA toolkit is installed.
#
#   make cuda-samples       the samples linked with libselfckpt (which provides
#                           the cu* entry points), their -native twins linked
#                           with the driver's libcuda, and the kernels' fatbins
#   make cuda-soft-samples  the kernels for the software device (tests/softcuda)
#   make gpu-test           every sample checkpointed and restored on the GPU, the
#                           Runtime API ones (rt/) in the driver-assisted mode
#   make gpu-test-soft      the same on the software device
#
# CUDA_HOME, CUDA_INCLUDE, NVCC and CUDA_ARCHS (nvcc -gencode options) are yours
# to set.

CUDA_HOME ?= /usr/local/cuda
CUDA_INCLUDE ?= $(CUDA_HOME)/include
NVCC ?= $(CUDA_HOME)/bin/nvcc
CUDA_ARCHS ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
# No fused multiply-add, so that the host versions of the kernels that the
# software device runs (tests/softcuda/sample_kernels.c) compute the same bits.
CUDA_SAMPLE_NVFLAGS := --fatbin -fmad=false

CUDA_SAMPLE_NAMES := vecadd matmul texrotate solver loader vmm graph peer managed resumable
CUDA_SAMPLE_DIR := $(BUILD)/samples/cuda
CUDA_SAMPLE_FATBINS := $(CUDA_SAMPLE_NAMES:%=$(CUDA_SAMPLE_DIR)/%.fatbin)
CUDA_SAMPLES := $(CUDA_SAMPLE_NAMES:%=$(CUDA_SAMPLE_DIR)/%)
CUDA_SAMPLES_NATIVE := $(CUDA_SAMPLES:%=%-native)
CUDA_SAMPLE_DEPS := samples/cuda/common.c samples/cuda/common.h samples/cuda/module.mk
CUDA_SAMPLE_CFLAGS := -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -I$(CUDA_INCLUDE)
# libselfckpt exports the Driver API: these programs must not link -lcuda.
CUDA_SAMPLE_SELFCKPT := -L$(BUILD)/lib -lselfckpt -Wl,-rpath,'$$ORIGIN/../../lib'
# The stub only resolves the symbols; the driver's libcuda.so.1 runs them.
CUDA_SAMPLE_DRIVER := -L$(CUDA_HOME)/lib64/stubs -lcuda

.PHONY: cuda-samples cuda-samples-native cuda-soft-samples cuda-toolkit gpu-test gpu-test-soft
cuda-samples: $(CUDA_SAMPLE_FATBINS) $(CUDA_SAMPLES) $(CUDA_SAMPLES_NATIVE)
cuda-samples-native: $(CUDA_SAMPLE_FATBINS) $(CUDA_SAMPLES_NATIVE)

cuda-toolkit:
	@command -v $(NVCC) > /dev/null 2>&1 || { echo "cuda-samples: no nvcc at NVCC=$(NVCC):" \
		"install the CUDA toolkit, or set NVCC or CUDA_HOME" >&2; exit 1; }
	@test -r $(CUDA_INCLUDE)/cuda.h || { echo "cuda-samples: no cuda.h in" \
		"$(CUDA_INCLUDE): set CUDA_HOME or CUDA_INCLUDE" >&2; exit 1; }

$(CUDA_SAMPLE_DIR)/%.fatbin: samples/cuda/kernels/%.cu samples/cuda/module.mk \
		$(PUBLIC_INCLUDE)/selfckpt_kernel.h | cuda-toolkit
	$(Q)mkdir -p $(@D)
	$(call quiet,NVCC,$<)$(NVCC) $(CUDA_SAMPLE_NVFLAGS) $(CUDA_ARCHS) -I$(PUBLIC_INCLUDE) -o $@ $<

# matmul --embedded: the fatbin inside the program.
$(CUDA_SAMPLE_DIR)/matmul-fatbin.o: samples/cuda/embed.S $(CUDA_SAMPLE_DIR)/matmul.fatbin
	$(call quiet,AS,$@)$(CC) -c -DFATBIN='"$(CUDA_SAMPLE_DIR)/matmul.fatbin"' -o $@ $<
$(CUDA_SAMPLE_DIR)/matmul $(CUDA_SAMPLE_DIR)/matmul-native: $(CUDA_SAMPLE_DIR)/matmul-fatbin.o

$(CUDA_SAMPLES): $(CUDA_SAMPLE_DIR)/%: samples/cuda/%.c $(CUDA_SAMPLE_DEPS) core/include/selfckpt.h \
		$(BUILD)/lib/libselfckpt.so | cuda-toolkit
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$@)$(CC) $(CPPFLAGS) $(CUDA_SAMPLE_CFLAGS) -I$(PUBLIC_INCLUDE) $(CFLAGS) \
		-o $@ $(filter %.c %.o,$^) $(LDFLAGS) $(CUDA_SAMPLE_SELFCKPT)

$(CUDA_SAMPLES_NATIVE): $(CUDA_SAMPLE_DIR)/%-native: samples/cuda/%.c $(CUDA_SAMPLE_DEPS) \
		| cuda-toolkit
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$@)$(CC) $(CPPFLAGS) $(CUDA_SAMPLE_CFLAGS) -DSAMPLE_NATIVE -I$(PUBLIC_INCLUDE) $(CFLAGS) \
		-o $@ $(filter %.c %.o,$^) $(LDFLAGS) $(CUDA_SAMPLE_DRIVER)

# The software device: the kernels as host functions, and a module per sample
# naming them: PTX for sm_90 whose comments name the library (by absolute path)
# and the globals. The library calls the device's texture reads, so it is
# linked against it.
SOFT_SAMPLES_LIB := $(BUILD)/tests/libsoftcuda-samples.so
SOFT_SAMPLE_MODS := $(CUDA_SAMPLE_NAMES:%=$(BUILD)/tests/softmods/%.softmod)
cuda-soft-samples: $(SOFT_SAMPLES_LIB) $(SOFT_SAMPLE_MODS)

$(SOFT_SAMPLES_LIB): tests/softcuda/sample_kernels.c tests/softcuda/softcuda.h \
		$(BUILD)/tests/libsoftcuda.so.1 samples/cuda/module.mk
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$@)$(CC) $(CPPFLAGS) -std=gnu11 -Wall -Wextra -Wshadow -fPIC \
		-fvisibility=hidden -ffp-contract=off -Itests/softcuda $(CFLAGS) -shared \
		$(LDFLAGS) -o $@ $< -L$(BUILD)/tests -l:libsoftcuda.so.1 -Wl,-rpath,'$$ORIGIN' -lm

$(BUILD)/tests/softmods/%.softmod: samples/cuda/kernels/%.soft samples/cuda/module.mk
	$(Q)mkdir -p $(@D)
	$(call quiet,GEN,$@){ printf '.version 8.0\n.target sm_90\n// softcuda library %s\n' \
		'$(abspath $(SOFT_SAMPLES_LIB))' && cat $<; } > $@

gpu-test: all cuda-samples
	$(Q)sh samples/cuda/gpu-test.sh $(BUILD)
	$(Q)sh samples/cuda/rt/gpu-test-rt.sh $(BUILD)

gpu-test-soft: all cuda-samples cuda-soft-samples
	$(Q)sh samples/cuda/gpu-test.sh $(BUILD) --soft

# Runtime API samples (samples/cuda/rt/): nvcc's default static cudart, and -cudart shared.
# They load the driver themselves: checkpointed in the driver-assisted mode.
# rtmixed also calls the Driver API (its module, launches and a buffer), so it
# links the driver (RT_SAMPLE_LIBS) and embeds its kernels' fatbin.
RT_SAMPLE_NAMES := rtloop selfcall rtmixed
RT_SAMPLES := $(RT_SAMPLE_NAMES:%=$(CUDA_SAMPLE_DIR)/%) $(RT_SAMPLE_NAMES:%=$(CUDA_SAMPLE_DIR)/%-shared)
RT_NVFLAGS := -O2 -fmad=false $(CUDA_ARCHS)
RT_SAMPLE_LIBS :=
.PHONY: cuda-rt-samples
cuda-samples: cuda-rt-samples
cuda-rt-samples: $(RT_SAMPLES)

$(CUDA_SAMPLE_DIR)/rtmixed.fatbin: samples/cuda/rt/rtmixed_kernels.cu samples/cuda/module.mk \
		| cuda-toolkit
	$(Q)mkdir -p $(@D)
	$(call quiet,NVCC,$<)$(NVCC) $(CUDA_SAMPLE_NVFLAGS) $(CUDA_ARCHS) -I$(PUBLIC_INCLUDE) -o $@ $<

$(CUDA_SAMPLE_DIR)/rtmixed-fatbin.o: samples/cuda/embed.S $(CUDA_SAMPLE_DIR)/rtmixed.fatbin
	$(call quiet,AS,$@)$(CC) -c -DFATBIN='"$(CUDA_SAMPLE_DIR)/rtmixed.fatbin"' -o $@ $<
RT_MIXED := $(CUDA_SAMPLE_DIR)/rtmixed $(CUDA_SAMPLE_DIR)/rtmixed-shared
$(RT_MIXED): $(CUDA_SAMPLE_DIR)/rtmixed-fatbin.o
$(RT_MIXED): RT_SAMPLE_LIBS := $(CUDA_SAMPLE_DRIVER)

$(CUDA_SAMPLE_DIR)/%: samples/cuda/rt/%.cu samples/cuda/rt/rt_common.h samples/cuda/module.mk \
		| cuda-toolkit
	$(Q)mkdir -p $(@D)
	$(call quiet,NVCC,$<)$(NVCC) $(RT_NVFLAGS) -o $@ $(filter %.cu %.o,$^) $(RT_SAMPLE_LIBS) -ldl

$(CUDA_SAMPLE_DIR)/%-shared: samples/cuda/rt/%.cu samples/cuda/rt/rt_common.h \
		samples/cuda/module.mk | cuda-toolkit
	$(Q)mkdir -p $(@D)
	$(call quiet,NVCC,$<)$(NVCC) $(RT_NVFLAGS) -cudart shared -o $@ $(filter %.cu %.o,$^) \
		$(RT_SAMPLE_LIBS) -ldl
