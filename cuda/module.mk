# cuda/: the CUDA Driver API entry points, the arena, checkpoint and replay (in the
# library), and the GPU proxy (selfckpt-gpu-proxy), the one process that loads libcuda.
# Only CUDA's header is needed to build: nothing links against libcuda. Without it
# (WITH_CUDA=0, see the Makefile) only cuda/tools/ is built: the tools still read the CUDA
# records of an image, and refuse to restore one where no GPU proxy is.

# cuda/lib/: the library side; cuda/proxy/: selfckpt-gpu-proxy; cuda/shared/: what both
# build in (the channel, the request codes, the GPU records, CUDA arrays); cuda/tools/: what the
# command-line tools know of CUDA (module images, the GPU check before a restore,
# selfckpt-driver-ckpt).
CUDA_LIB_SRCS := $(addprefix cuda/lib/,api_lock.c gpu_capture.c resumable.c api_init.c api_proc.c api_ctx.c api_memory.c \
	api_copy.c api_copy2d.c api_module.c api_kernel.c api_launch.c api_hostfn.c api_vmm.c api_mempool.c api_occupancy.c api_query.c api_stream.c \
	api_array.c api_peer.c api_graph.c api_graph_more.c api_capture.c api_managed.c graph_desc.c \
	errors.c \
	objects.c context.c managed.c \
	par_copy.c arena.c host_heap.c client.c module_size.c gpu_checkpoint.c devmem_lineage.c replay.c \
	driver_seen.c driver_call.c driver_ckpt.c)
CUDA_SHARED_SRCS := $(addprefix cuda/shared/,channel.c array_format.c array_data.c)
# The GPU records of an image (no CUDA header needed): in every build, as the tools read them.
CUDA_RECORD_SRCS := cuda/shared/gpu_records.c cuda/shared/driver_record.c cuda/shared/devmem_chain.c
CUDA_TOOLS_SRCS := $(addprefix cuda/tools/,module_info.c module_elf.c module_fatbin.c module_ptx.c \
	module_arch.c cuda_log_read.c gpu_check.c devmem_parents.c)
LIB_SRCS += $(CUDA_RECORD_SRCS)
LIB_A_SRCS += $(CUDA_TOOLS_SRCS)

$(CUDA_INCLUDE)/cuda.h:
	@echo "selfckpt: CUDA's header $@ is missing; set CUDA_HOME (default /usr/local/cuda)" >&2
	@exit 1

ifeq ($(WITH_CUDA),1)
LIB_SRCS += $(CUDA_LIB_SRCS) $(CUDA_SHARED_SRCS)

# The proxy reads images at a restart (proxy_upload.c): it has the format's code too.
FORMAT_SRCS := $(filter format/%,$(LIB_SRCS))
COMPRESS_SRCS := $(filter compress/%,$(LIB_SRCS))

PROXY_SRCS := $(addprefix cuda/proxy/,proxy_main.c proxy_dispatch.c proxy_driver.c \
	proxy_ops_device.c proxy_ops_code.c proxy_ops_function.c proxy_ops_memory.c proxy_ops_stream.c proxy_ops_graph.c proxy_upload.c \
	proxy_zero.c proxy_capture.c) cuda/shared/gpu_records.c cuda/shared/devmem_chain.c \
	$(CUDA_SHARED_SRCS) $(FORMAT_SRCS) $(COMPRESS_SRCS)
PROXY_OBJS := $(PROXY_SRCS:%.c=$(BUILD)/obj/proxy/%.o)
PROXY := $(BUILD)/bin/selfckpt-gpu-proxy
TOOLS += $(PROXY)

# Every other function of cuda.h gets an entry point that says it is not supported.
CUDA_LIB_OBJS := $(CUDA_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
# What needs CUDA's header (cuda/tools/ does not).
CUDA_OBJS := $(CUDA_LIB_OBJS) $(CUDA_SHARED_SRCS:%.c=$(BUILD)/obj/%.o)
UNSUPPORTED_C := $(BUILD)/gen/cuda/unsupported.c
UNSUPPORTED_O := $(BUILD)/obj/gen/cuda/unsupported.o
LIB_EXTRA_OBJS += $(UNSUPPORTED_O)

$(UNSUPPORTED_C): cuda/lib/gen-unsupported.sh $(CUDA_LIB_OBJS) | $(CUDA_INCLUDE)/cuda.h
	$(Q)mkdir -p $(@D)
	$(call quiet,GEN,$@)sh cuda/lib/gen-unsupported.sh '$(CC)' $(CUDA_INCLUDE) $@ $(CUDA_LIB_OBJS)

# Generated, it is the library side's code all the same.
$(UNSUPPORTED_O): $(UNSUPPORTED_C) cuda/lib/unsupported.h | $(COMPILE_DEPS)
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(CC) $(CPPFLAGS) $(call includes_of,cuda/lib/) $(SC_CFLAGS) $(CFLAGS) \
		-c -o $@ $<

$(CUDA_OBJS) $(UNSUPPORTED_O): SC_CFLAGS += -I$(CUDA_INCLUDE)
$(CUDA_OBJS): | $(CUDA_INCLUDE)/cuda.h
PROXY_CFLAGS = $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(SC_CFLAGS))

# The proxy is its own program: no sanitizer (like every process the tests
# start), and none of the library.
$(BUILD)/obj/proxy/%.o: %.c | $(COMPILE_DEPS) $(CUDA_INCLUDE)/cuda.h
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(CC) $(CPPFLAGS) $(call includes_of,$<) $(PROXY_CFLAGS) \
		-I$(CUDA_INCLUDE) $(CFLAGS) -c -o $@ $<

# The zero-scan kernel, as PTX inside the proxy, where nvcc is; without it the
# library checks device memory for zeros on the host.
NVCC ?= $(CUDA_HOME)/bin/nvcc
ifneq ($(shell command -v $(NVCC) 2> /dev/null),)
ZERO_SCAN_PTX := $(BUILD)/gen/cuda/zero_scan.ptx
ZERO_SCAN_O := $(BUILD)/obj/proxy/cuda/proxy/zero_scan.o
PROXY_OBJS += $(ZERO_SCAN_O)
$(BUILD)/obj/proxy/cuda/proxy/proxy_zero.o: PROXY_CFLAGS += -DSC_ZERO_SCAN

$(ZERO_SCAN_PTX): cuda/proxy/zero_scan.cu cuda/shared/piece_hash.h
	$(Q)mkdir -p $(@D)
	$(call quiet,NVCC,$<)$(NVCC) -ptx -arch=compute_75 -I. -o $@ $<

$(ZERO_SCAN_O): cuda/proxy/zero_scan.S $(ZERO_SCAN_PTX)
	$(Q)mkdir -p $(@D)
	$(call quiet,AS,$@)$(CC) -c -DZERO_SCAN_PTX='"$(ZERO_SCAN_PTX)"' -o $@ $<
endif

$(PROXY): $(PROXY_OBJS)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ -lzstd -lxxhash -ldl -lpthread

# selfckpt-driver-ckpt: asks the driver for the process checkpoint of a program in which the
# driver runs itself (cuda/lib/driver_ckpt.c). It loads the driver at run time, like the proxy.
DRIVER_TOOL := $(BUILD)/bin/selfckpt-driver-ckpt
TOOLS += $(DRIVER_TOOL)

$(DRIVER_TOOL): $(BUILD)/obj/proxy/cuda/tools/driver_tool.o
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ -ldl
endif
