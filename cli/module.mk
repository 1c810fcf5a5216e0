# cli/: the command-line tools, linked statically against the library.
TOOLS += $(BUILD)/bin/selfckpt-inspect

INSPECT_OBJS := $(BUILD)/obj/cli/inspect.o $(BUILD)/obj/cli/tool.o

$(BUILD)/bin/selfckpt-inspect: $(INSPECT_OBJS) $(LIB_A)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ $(SC_LDLIBS)
