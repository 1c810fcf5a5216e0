# cli/: the command-line tools, linked statically against the library.
TOOLS += $(BUILD)/bin/selfckpt-inspect $(BUILD)/bin/selfckpt-run $(BUILD)/bin/selfckpt-merge
ifneq ($(SAN),1)
TOOLS += $(BUILD)/bin/selfckpt-restore # see PLAIN_BUILD in the Makefile
endif

INSPECT_OBJS := $(BUILD)/obj/cli/inspect.o $(BUILD)/obj/cli/inspect_chain.o $(BUILD)/obj/cli/tool.o

$(BUILD)/bin/selfckpt-inspect: $(INSPECT_OBJS) $(LIB_A)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ $(SC_LDLIBS)

# selfckpt-run preloads the shared library: building the tool builds it too.
RUN_OBJS := $(BUILD)/obj/cli/run.o $(BUILD)/obj/cli/run_held.o $(BUILD)/obj/cli/tool.o

$(BUILD)/bin/selfckpt-run: $(RUN_OBJS) $(LIB_A) | $(LIB_SO)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ $(SC_LDLIBS)

# selfckpt-restore is static: it must not depend on the shared libraries of
# the machine it restores on, and its own mappings must all be unmappable.
RESTORE_OBJS := $(BUILD)/obj/cli/restore.o $(BUILD)/obj/cli/tool.o $(RESTORE_ENGINE_OBJS)

$(BUILD)/bin/selfckpt-restore: $(RESTORE_OBJS) $(LIB_A)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) -static $(filter-out -fsanitize=%,$(SC_LDFLAGS)) $(LDFLAGS) \
		-o $@ $^ $(SC_LDLIBS)

# selfckpt-merge reads a chain as the restore engine does.
MERGE_OBJS := $(BUILD)/obj/cli/merge.o $(BUILD)/obj/cli/tool.o $(BUILD)/obj/core/restore/chain_merge.o \
	$(RESTORE_ENGINE_OBJS)

$(BUILD)/bin/selfckpt-merge: $(MERGE_OBJS) $(LIB_A)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ $(SC_LDLIBS)
