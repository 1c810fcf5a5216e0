# selfckpt - standalone, unprivileged checkpoint/restart for Linux x86-64 and CUDA.
#
#   make              library, tools and samples in $(BUILD) (default build/)
#   make test         the Criterion suite (SAN=1: under ASan and UBSan)
#   make demo         checkpoint a running program, kill it, restore it
#   make bench        throughput benchmarks (prints figures; asserts nothing)
#   make fuzz         libFuzzer on the reader and every record decoder (FUZZ_SECONDS=300 each)
#   make fuzz-build   the fuzz targets and their seeds in $(BUILD)/fuzz/ (tests/fuzz/run-all.sh)
#   make install      PREFIX=/usr/local DESTDIR=
#   V=1               show full commands
#
# CFLAGS, CPPFLAGS and LDFLAGS belong to the user; project flags live in SC_*.

BUILD ?= build
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
DESTDIR ?=

CC ?= cc
CFLAGS ?= -O2 -g
SC_CFLAGS := -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wno-missing-field-initializers \
	-fPIC -fvisibility=hidden -I. -Iformat -Icore -MMD -MP
SC_LDLIBS := -lelf -lz -lzstd -lxxhash -lpthread

# Processes that are checkpointed or restored (the restorer, the programs the
# tests checkpoint, the preloaded library) cannot carry a sanitizer runtime:
# its shadow memory is no part of a process image. Under SAN=1 only the test
# runner and the code it calls in-process are sanitized; those processes come
# from the plain build in $(PLAIN_BUILD).
PLAIN_BUILD := $(BUILD)
ifeq ($(SAN),1)
# override: a BUILD given on the command line names the plain build here too
override BUILD := $(BUILD)-san
SC_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SC_CFLAGS += $(SC_SAN)
SC_LDFLAGS += $(SC_SAN)
endif

# Code that runs in signal handlers, in the frozen snapshot child, in re-created
# threads and in the restore loader: no stack protector (it reads TLS), no
# fortify or sanitizer runtime (libc), no builtins that become libc calls.
SC_RT_CFLAGS := $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(SC_CFLAGS)) \
	-ffreestanding -fno-stack-protector -fno-builtin -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=0 \
	-fno-sanitize=all -DSC_RT

VERSION := 0.1.0
SONAME_MAJOR := 1

ifneq ($(V),1)
Q := @
quiet = @printf '  %-7s %s\n' $(1) $(2);
else
Q :=
quiet =
endif

.DEFAULT_GOAL := all
LIB_A := $(BUILD)/lib/libselfckpt.a
LIB_SO := $(BUILD)/lib/libselfckpt.so.$(SONAME_MAJOR)
LIB_SRCS :=
LIB_SO_SRCS :=
# In the static archive only (the tools use it, a preloaded library must not need libelf).
LIB_A_SRCS :=
LIB_EXTRA_OBJS := # generated sources' objects, in both libraries
TOOLS :=
# Missing -dev packages are named once; only the set-up of `make test` and
# `make demo` installs them (as root, Debian): a `make` or a `sudo make
# install` never installs a package.
# Defined before the modules: their rules name the stamps when they are read.
DEPS_STAMP := $(BUILD)/.deps-build
TEST_DEPS_STAMP := $(BUILD)/.deps-test
DEPS_INSTALL ?= $(if $(filter test demo test-deps,$(MAKECMDGOALS)),1,0)
export DEPS_INSTALL # the sub-makes of `make test` build with what it installed
include compress/module.mk
include format/module.mk
include core/module.mk
include cuda/module.mk
include cli/module.mk
include samples/module.mk
include tests/module.mk

LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o) $(LIB_EXTRA_OBJS)
LIB_SO_OBJS := $(LIB_SO_SRCS:%.c=$(BUILD)/obj/%.o)
LIB_A_OBJS := $(LIB_A_SRCS:%.c=$(BUILD)/obj/%.o)

.PHONY: all lib tools samples test demo bench fuzz fuzz-build install clean deps test-deps
all: lib tools samples

lib: $(LIB_A) $(LIB_SO) $(BUILD)/lib/libselfckpt.so $(BUILD)/lib/pkgconfig/selfckpt.pc \
	$(BUILD)/.rt-symbols

# Freestanding code (*_rt.c) calls nothing but itself: checked on its objects.
RT_OBJS = $(filter %_rt.o,$(LIB_OBJS) $(LIB_SO_OBJS) $(LIB_A_OBJS))
$(BUILD)/.rt-symbols: $(RT_OBJS) tests/check-rt-symbols.sh
	$(Q)sh tests/check-rt-symbols.sh $(RT_OBJS)
	$(Q)touch $@

$(DEPS_STAMP): tests/setup-deps.sh
	$(Q)SELFCKPT_DEPS_INSTALL=$(DEPS_INSTALL) sh tests/setup-deps.sh build
	$(Q)mkdir -p $(@D) && touch $@
$(TEST_DEPS_STAMP): tests/setup-deps.sh
	$(Q)SELFCKPT_DEPS_INSTALL=$(DEPS_INSTALL) sh tests/setup-deps.sh test
	$(Q)mkdir -p $(@D) && touch $@
deps: $(DEPS_STAMP)
test-deps: $(TEST_DEPS_STAMP)

$(BUILD)/obj/%.o: %.c | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(CC) $(CPPFLAGS) $(SC_CFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/obj/%_rt.o: %_rt.c | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(CC) $(CPPFLAGS) $(SC_RT_CFLAGS) $(CFLAGS) -c -o $@ $<

$(LIB_A): $(LIB_OBJS) $(LIB_A_OBJS)
	$(Q)mkdir -p $(@D)
	$(call quiet,AR,$@)rm -f $@ && $(AR) rcs $@ $^

$(LIB_SO): $(LIB_OBJS) $(LIB_SO_OBJS)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) -shared -Wl,-soname,libselfckpt.so.$(SONAME_MAJOR) \
		$(SC_LDFLAGS) $(LDFLAGS) -o $@ $^ -Wl,--as-needed $(SC_LDLIBS)

$(BUILD)/lib/libselfckpt.so: $(LIB_SO)
	$(Q)ln -sf libselfckpt.so.$(SONAME_MAJOR) $@

# The library selfckpt-run --cuda=driver preloads: no cu* entry points (cuda/driver-mode.map).
LIB_DRIVER_SO := $(BUILD)/lib/libselfckpt-driver.so.$(SONAME_MAJOR)
lib: $(LIB_DRIVER_SO)
test-progs: $(LIB_DRIVER_SO) # tests/cli/test_driver.c runs selfckpt-run --cuda=driver
$(LIB_DRIVER_SO): $(LIB_OBJS) $(LIB_SO_OBJS) cuda/driver-mode.map
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) -shared -Wl,-soname,libselfckpt-driver.so.$(SONAME_MAJOR) \
		-Wl,--version-script=cuda/driver-mode.map $(SC_LDFLAGS) $(LDFLAGS) -o $@ \
		$(filter %.o,$^) -Wl,--as-needed $(SC_LDLIBS)

# A static link pulls the CUDA module's hooks in even where the program calls no cu* function
# of the library: it may load the CUDA driver itself, and its checkpoint must see that.
PC_STATIC_FLAGS := -Wl,-u,sc_cuda_hooks_install

$(BUILD)/lib/pkgconfig/selfckpt.pc: Makefile
	$(Q)mkdir -p $(@D)
	$(call quiet,GEN,$@)printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' \
		'includedir=$(INCLUDEDIR)' '' 'Name: selfckpt' \
		'Description: unprivileged checkpoint/restart for Linux processes and CUDA' \
		'Version: $(VERSION)' 'Libs: -L$${libdir} -lselfckpt' \
		'Libs.private: $(PC_STATIC_FLAGS) $(SC_LDLIBS)' 'Cflags: -I$${includedir}' > $@

tools: $(TOOLS)

install: all
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(BINDIR)
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIB_SO) $(LIB_DRIVER_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libselfckpt.so.$(SONAME_MAJOR) $(DESTDIR)$(LIBDIR)/libselfckpt.so
	install -m 644 core/selfckpt.h format/selfckpt_errors.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 $(BUILD)/lib/pkgconfig/selfckpt.pc $(DESTDIR)$(LIBDIR)/pkgconfig/
	install -m 755 $(TOOLS) $(DESTDIR)$(BINDIR)/

clean:
	rm -rf $(BUILD) $(BUILD)-san

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
