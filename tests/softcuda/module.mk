# tests/softcuda/: the software CUDA device, a stand-in for libcuda.so.1 that runs the Driver
# API on the CPU (see tests/softcuda/README.md), the kernel library of its tests, and the tests.
# The device and the kernels come from the plain build (test-progs): the GPU proxy that loads
# them is never sanitized.
CUDA_INCLUDE ?= /usr/local/cuda/include

SOFTCUDA_SRCS := \
	tests/softcuda/softcuda.c \
	tests/softcuda/softcuda_array.c \
	tests/softcuda/softcuda_capture.c \
	tests/softcuda/softcuda_copy.c \
	tests/softcuda/softcuda_ctx.c \
	tests/softcuda/softcuda_device.c \
	tests/softcuda/softcuda_errors.c \
	tests/softcuda/softcuda_graph.c \
	tests/softcuda/softcuda_launch.c \
	tests/softcuda/softcuda_mem.c \
	tests/softcuda/softcuda_module.c \
	tests/softcuda/softcuda_occupancy.c \
	tests/softcuda/softcuda_stream.c \
	tests/softcuda/softcuda_vmm.c
SOFTCUDA_HDRS := tests/softcuda/softcuda.h tests/softcuda/softcuda_internal.h
SOFTCUDA_CFLAGS := -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -I$(CUDA_INCLUDE)
SOFTCUDA_LIB := $(BUILD)/tests/libsoftcuda.so.1
SOFTCUDA_KERNELS := $(BUILD)/tests/libsoftcuda-testkernels.so

TEST_SRCS += tests/softcuda/test_softcuda.c
$(BUILD)/obj/tests/softcuda/%.o: SC_CFLAGS += -I$(CUDA_INCLUDE)

test-progs: $(SOFTCUDA_LIB) $(SOFTCUDA_KERNELS)

# Hidden by default, the device exports what cuda.h and softcuda.h declare and nothing else.
$(SOFTCUDA_LIB): $(SOFTCUDA_SRCS) $(SOFTCUDA_HDRS)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) -shared -fPIC $(CPPFLAGS) $(SOFTCUDA_CFLAGS) -fvisibility=hidden \
		$(CFLAGS) -Wl,-soname,libsoftcuda.so.1 $(LDFLAGS) -o $@ $(SOFTCUDA_SRCS) \
		-ldl -lpthread

# The device as a driver the program loads itself (tests/cli/test_driver.c), under the real
# driver's soname, as cudart finds it: with the driver's process checkpoint as a test double
# (softcuda_procckpt.c), and, in driver-old/, without it, as a driver older than 570.
SOFTCUDA_DRIVER := $(BUILD)/tests/driver/libcuda.so.1
SOFTCUDA_DRIVER_OLD := $(BUILD)/tests/driver-old/libcuda.so.1
test-progs: $(SOFTCUDA_DRIVER) $(SOFTCUDA_DRIVER_OLD)

$(SOFTCUDA_DRIVER): $(SOFTCUDA_SRCS) tests/softcuda/softcuda_procckpt.c $(SOFTCUDA_HDRS)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) -shared -fPIC $(CPPFLAGS) $(SOFTCUDA_CFLAGS) -fvisibility=hidden \
		$(CFLAGS) -Wl,-soname,libcuda.so.1 $(LDFLAGS) -o $@ $(filter %.c,$^) -ldl -lpthread

$(SOFTCUDA_DRIVER_OLD): $(SOFTCUDA_SRCS) $(SOFTCUDA_HDRS)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) -shared -fPIC $(CPPFLAGS) $(SOFTCUDA_CFLAGS) -fvisibility=hidden \
		$(CFLAGS) -Wl,-soname,libcuda.so.1 $(LDFLAGS) -o $@ $(SOFTCUDA_SRCS) -ldl -lpthread

# The kernels call softcuda_tex2d_read() and friends: they need the device, found by its
# soname among the libraries already loaded, or next to them.
$(SOFTCUDA_KERNELS): tests/softcuda/test_kernels.c tests/softcuda/softcuda.h $(SOFTCUDA_LIB)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) -shared -fPIC $(CPPFLAGS) $(SOFTCUDA_CFLAGS) $(CFLAGS) \
		$(LDFLAGS) -o $@ $< -L$(@D) -l:libsoftcuda.so.1 -Wl,-rpath,'$$ORIGIN'
