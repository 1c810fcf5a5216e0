# cli/: the command-line tools, linked statically against the library.
TOOLS += $(BUILD)/bin/selfckpt-inspect

# The Makefile sets LIB_A only after including this file, and prerequisites expand at once,
# so the archive is named here.
INSPECT_OBJS := $(BUILD)/obj/cli/inspect.o $(BUILD)/obj/cli/tool.o

$(BUILD)/bin/selfckpt-inspect: $(INSPECT_OBJS) $(BUILD)/lib/libselfckpt.a
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) $(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ $(SC_LDLIBS)
