# cuda/: the CUDA Driver API entry points, the arena, checkpoint and replay (in the
# library), and the GPU proxy (selfckpt-gpu-proxy), the one process that loads libcuda.
# Only CUDA's header is needed to build: nothing links against libcuda.
CUDA_HOME ?= /usr/local/cuda
CUDA_INCLUDE ?= $(CUDA_HOME)/include

CUDA_LIB_SRCS := cuda/api_lock.c cuda/api_init.c cuda/api_proc.c cuda/api_ctx.c cuda/api_memory.c cuda/api_copy.c \
	cuda/api_copy2d.c cuda/api_module.c cuda/api_stream.c cuda/api_array.c cuda/array_format.c cuda/array_data.c cuda/errors.c \
	cuda/objects.c cuda/context.c cuda/par_copy.c cuda/arena.c cuda/host_heap.c cuda/client.c \
	cuda/channel.c cuda/image.c cuda/cuda_image.c cuda/ckpt.c cuda/replay.c \
	cuda/driver_seen.c cuda/driver_call.c cuda/driver_ckpt.c cuda/driver_record.c
LIB_A_SRCS += cuda/module_info.c cuda/module_elf.c cuda/module_fatbin.c cuda/module_ptx.c \
	cuda/module_arch.c cuda/cuda_log_read.c
LIB_SRCS += $(CUDA_LIB_SRCS)

# The proxy reads images at a restart (proxy_upload.c): it has the format's code too.
FORMAT_SRCS := $(filter format/%,$(LIB_SRCS))
COMPRESS_SRCS := $(filter compress/%,$(LIB_SRCS))

PROXY_SRCS := cuda/proxy_main.c cuda/proxy_dispatch.c cuda/proxy_driver.c \
	cuda/proxy_ops_device.c cuda/proxy_ops_code.c cuda/proxy_ops_memory.c \
	cuda/proxy_ops_stream.c cuda/proxy_upload.c cuda/proxy_zero.c cuda/array_format.c cuda/array_data.c cuda/cuda_image.c \
	cuda/channel.c $(FORMAT_SRCS) $(COMPRESS_SRCS)
PROXY_OBJS := $(PROXY_SRCS:%.c=$(BUILD)/obj/proxy/%.o)
PROXY := $(BUILD)/bin/selfckpt-gpu-proxy
TOOLS += $(PROXY)

# Every other function of cuda.h gets an entry point that says it is not supported.
CUDA_LIB_OBJS := $(CUDA_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
UNSUPPORTED_C := $(BUILD)/gen/cuda/unsupported.c
UNSUPPORTED_O := $(BUILD)/obj/gen/cuda/unsupported.o
LIB_EXTRA_OBJS += $(UNSUPPORTED_O)

$(UNSUPPORTED_C): cuda/gen-unsupported.sh $(CUDA_LIB_OBJS) | $(CUDA_INCLUDE)/cuda.h
	$(Q)mkdir -p $(@D)
	$(call quiet,GEN,$@)sh cuda/gen-unsupported.sh '$(CC)' $(CUDA_INCLUDE) $@ $(CUDA_LIB_OBJS)

$(UNSUPPORTED_O): $(UNSUPPORTED_C) cuda/unsupported.h
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(CC) $(CPPFLAGS) $(SC_CFLAGS) $(CFLAGS) -c -o $@ $<

$(CUDA_LIB_SRCS:%.c=$(BUILD)/obj/%.o): SC_CFLAGS += -I$(CUDA_INCLUDE)
$(CUDA_LIB_SRCS:%.c=$(BUILD)/obj/%.o): | $(CUDA_INCLUDE)/cuda.h
PROXY_CFLAGS = $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(SC_CFLAGS))

# The proxy is its own program: no sanitizer (like every process the tests
# start), and none of the library.
$(BUILD)/obj/proxy/%.o: %.c | $(DEPS_STAMP) $(CUDA_INCLUDE)/cuda.h
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(CC) $(CPPFLAGS) $(PROXY_CFLAGS) -I$(CUDA_INCLUDE) $(CFLAGS) \
		-c -o $@ $<

# The zero-scan kernel, as PTX inside the proxy, where nvcc is; without it the
# library checks device memory for zeros on the host.
NVCC ?= $(CUDA_HOME)/bin/nvcc
ifneq ($(shell command -v $(NVCC) 2> /dev/null),)
ZERO_SCAN_PTX := $(BUILD)/gen/cuda/zero_scan.ptx
ZERO_SCAN_O := $(BUILD)/obj/proxy/cuda/zero_scan.o
PROXY_OBJS += $(ZERO_SCAN_O)
$(BUILD)/obj/proxy/cuda/proxy_zero.o: PROXY_CFLAGS += -DSC_ZERO_SCAN

$(ZERO_SCAN_PTX): cuda/zero_scan.cu
	$(Q)mkdir -p $(@D)
	$(call quiet,NVCC,$<)$(NVCC) -ptx -arch=compute_75 -o $@ $<

$(ZERO_SCAN_O): cuda/zero_scan.S $(ZERO_SCAN_PTX)
	$(Q)mkdir -p $(@D)
	$(call quiet,AS,$@)$(CC) -c -DZERO_SCAN_PTX='"$(ZERO_SCAN_PTX)"' -o $@ $<
endif

$(PROXY): $(PROXY_OBJS)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ -lzstd -lxxhash -ldl -lpthread

$(CUDA_INCLUDE)/cuda.h:
	@echo "selfckpt: CUDA's header $@ is missing; set CUDA_HOME (default /usr/local/cuda)" >&2
	@exit 1

# selfckpt-driver-ckpt: asks the driver for the process checkpoint of a program in which the
# driver runs itself (driver_ckpt.c). It loads the driver at run time, like the proxy.
DRIVER_TOOL := $(BUILD)/bin/selfckpt-driver-ckpt
TOOLS += $(DRIVER_TOOL)

$(DRIVER_TOOL): $(BUILD)/obj/proxy/cuda/driver_tool.o
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ -ldl
