# cli/: the command-line tools, linked statically against the library.
TOOLS += $(BUILD)/bin/selfckpt-inspect
