# samples/: small programs that show selfckpt in use; `make demo` runs them.
SAMPLES := $(BUILD)/samples/series $(BUILD)/samples/api

# series knows nothing of selfckpt: an ordinary dynamically linked program.
$(BUILD)/samples/series: samples/series.c
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(CC) $(CFLAGS) -Wall -o $@ $<

# api uses the public API only, linked against the static library.
$(BUILD)/samples/api: samples/api.c $(LIB_A)
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(CC) $(CFLAGS) -Wall -I$(PUBLIC_INCLUDE) -o $@ $< $(LIB_A) $(SC_LDLIBS)

samples: $(SAMPLES)

demo: all
	$(Q)sh samples/demo.sh $(BUILD)
include samples/cuda/module.mk
