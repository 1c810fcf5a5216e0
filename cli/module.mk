# cli/: the command-line tools, linked statically against the library.
TOOLS += $(BUILD)/bin/selfckpt-inspect $(BUILD)/bin/selfckpt-run
ifneq ($(SAN),1)
TOOLS += $(BUILD)/bin/selfckpt-restore # see PLAIN_BUILD in the Makefile
endif

INSPECT_OBJS := $(BUILD)/obj/cli/inspect.o $(BUILD)/obj/cli/tool.o

$(BUILD)/bin/selfckpt-inspect: $(INSPECT_OBJS) $(LIB_A)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ $(SC_LDLIBS)

# selfckpt-run preloads the shared library: building the tool builds it too.
RUN_OBJS := $(BUILD)/obj/cli/run.o $(BUILD)/obj/cli/tool.o

$(BUILD)/bin/selfckpt-run: $(RUN_OBJS) $(LIB_A) | $(LIB_SO)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ $(SC_LDLIBS)

# The restorer blob: freestanding, position-independent, linked flat at 0 and
# embedded in selfckpt-restore, which copies it wherever the image leaves room.
BLOB_CFLAGS := $(SC_RT_CFLAGS) -fPIE -Os -fno-jump-tables -fno-asynchronous-unwind-tables \
	-fvisibility=hidden -mno-red-zone
BLOB_OBJ := $(BUILD)/obj/cli/restorer_blob_rt.o $(BUILD)/obj/cli/restorer_timers_blob_rt.o
BLOB_ELF := $(BUILD)/obj/cli/restorer_blob.elf
BLOB_BIN := $(BUILD)/obj/cli/restorer_blob.bin

$(BUILD)/obj/cli/restorer_blob_rt.o: cli/restorer_rt.c | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(CC) $(CPPFLAGS) $(BLOB_CFLAGS) -c -o $@ $<

$(BUILD)/obj/cli/restorer_timers_blob_rt.o: cli/restorer_timers_rt.c | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(CC) $(CPPFLAGS) $(BLOB_CFLAGS) -c -o $@ $<

$(BLOB_ELF): $(BLOB_OBJ) cli/restorer.lds
	$(call quiet,LD,$@)$(LD) -T cli/restorer.lds -o $@ $(BLOB_OBJ)
	$(Q)if readelf -r $(BLOB_OBJ) | grep -qE 'R_X86_64_(64|32|32S|GOT)'; then \
		echo "restorer blob needs absolute relocations:"; readelf -r $(BLOB_OBJ); exit 1; fi

$(BLOB_BIN): $(BLOB_ELF)
	$(call quiet,BIN,$@)objcopy -O binary $< $@

$(BUILD)/obj/cli/restorer_blob.o: cli/restorer_blob.S $(BLOB_BIN)
	$(call quiet,AS,$@)$(CC) -c -DSC_BLOB_BIN='"$(BLOB_BIN)"' -o $@ $<

# selfckpt-restore is static: it must not depend on the shared libraries of
# the machine it restores on, and its own mappings must all be unmappable.
RESTORE_OBJS := $(BUILD)/obj/cli/restore.o $(BUILD)/obj/cli/restore_load.o \
	$(BUILD)/obj/cli/restore_plan.o $(BUILD)/obj/cli/restore_jump.o \
	$(BUILD)/obj/cli/restore_ids.o $(BUILD)/obj/cli/restore_probe.o \
	$(BUILD)/obj/cli/restore_cuda.o $(BUILD)/obj/cli/restore_timers.o \
	$(BUILD)/obj/cli/restore_sysv.o \
	$(BUILD)/obj/cli/tool.o $(BUILD)/obj/cli/restorer_blob.o

$(BUILD)/bin/selfckpt-restore: $(RESTORE_OBJS) $(LIB_A)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) -static $(filter-out -fsanitize=%,$(SC_LDFLAGS)) $(LDFLAGS) \
		-o $@ $^ $(SC_LDLIBS)
