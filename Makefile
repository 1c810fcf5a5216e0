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
	-fPIC -fvisibility=hidden -MMD -MP
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
comma := ,
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
# The CUDA part builds where CUDA's header is (WITH_CUDA=1); elsewhere - embedded
# boards, CPU containers - the process library and the tools build alone.
CUDA_HOME ?= /usr/local/cuda
CUDA_INCLUDE ?= $(CUDA_HOME)/include
WITH_CUDA ?= $(if $(wildcard $(CUDA_INCLUDE)/cuda.h),1,0)
# Objects built the other way must not end in the libraries: a change of WITH_CUDA in
# one build folder remakes them.
CUDA_CONFIG_STAMP := $(BUILD)/.with-cuda-$(WITH_CUDA)

# Layering: compress <- format <- core <- cuda <- cli. Each module's code may
# include the installed headers (core/include/) and the headers of the modules
# it sees, no others. It is compiled against a view of the tree that holds only
# those folders ($(BUILD)/view/), so a wrong #include does not build, and
# tests/check-layering.sh names it before anything is compiled. A file belongs
# to the first module in MODULES whose folder holds it; tests/ see everything.
MODULES := cuda/shared cuda/proxy cuda/lib cuda/tools compress format core cli
SEES.compress := compress
SEES.format := compress format
SEES.core := compress format core
SEES.cuda/shared := compress format cuda/shared
SEES.cuda/proxy := $(SEES.cuda/shared) cuda/proxy
SEES.cuda/lib := $(SEES.core) cuda/shared cuda/lib
SEES.cuda/tools := $(SEES.core) cuda/shared cuda/tools
SEES.cli := $(SEES.core) cuda/shared cuda/tools cli
PUBLIC_INCLUDE := core/include
module_of = $(firstword $(foreach m,$(MODULES),$(if $(filter $(m)/%,$(1)),$(m))) tests)
view_of = $(BUILD)/view/$(subst /,-,$(1))
# The -I options of source file $(1).
TEST_INCLUDES := -I. -I$(PUBLIC_INCLUDE)
includes_of = $(if $(filter tests,$(call module_of,$(1))),$(TEST_INCLUDES),-I$(call view_of,$(call \
	module_of,$(1))) -I$(PUBLIC_INCLUDE))
LAYERING_RULES = $(foreach m,$(MODULES),'$(m)=$(SEES.$(m))')
VIEWS_STAMP := $(BUILD)/view/.made
LAYERING_STAMP := $(BUILD)/.layering
# Every object: after the set-up, the views and the layering check.
COMPILE_DEPS := $(DEPS_STAMP) $(VIEWS_STAMP) $(LAYERING_STAMP)
LAYERED_FILES = $(shell find $(MODULES) $(PUBLIC_INCLUDE) -name '*.[chS]' 2> /dev/null)

$(VIEWS_STAMP): Makefile tests/make-view.sh
	$(Q)rm -rf $(@D)
	$(Q)$(foreach m,$(MODULES),sh tests/make-view.sh $(call view_of,$(m)) $(SEES.$(m)) &&) :
	$(Q)touch $@

$(LAYERING_STAMP): $(LAYERED_FILES) Makefile tests/check-layering.sh
	$(Q)sh tests/check-layering.sh . $(LAYERING_RULES)
	$(Q)mkdir -p $(@D) && touch $@

include compress/module.mk
include format/module.mk
include core/module.mk
include core/restore/module.mk
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

$(BUILD)/obj/%.o: %.c | $(COMPILE_DEPS)
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(CC) $(CPPFLAGS) $(call includes_of,$<) $(SC_CFLAGS) $(CFLAGS) \
		-c -o $@ $<

$(BUILD)/obj/%_rt.o: %_rt.c | $(COMPILE_DEPS)
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(CC) $(CPPFLAGS) $(call includes_of,$<) $(SC_RT_CFLAGS) $(CFLAGS) \
		-c -o $@ $<

$(CUDA_CONFIG_STAMP):
	$(Q)mkdir -p $(@D) && rm -f $(BUILD)/.with-cuda-* && touch $@
	$(Q)if [ $(WITH_CUDA) = 0 ]; then echo "selfckpt: no $(CUDA_INCLUDE)/cuda.h: building" \
		"without CUDA support (the process library and tools; set CUDA_HOME to build" \
		"the CUDA part)" >&2; fi

$(LIB_A): $(LIB_OBJS) $(LIB_A_OBJS) $(CUDA_CONFIG_STAMP)
	$(Q)mkdir -p $(@D)
	$(call quiet,AR,$@)rm -f $@ && $(AR) rcs $@ $(filter %.o,$^)

$(LIB_SO): $(LIB_OBJS) $(LIB_SO_OBJS) $(CUDA_CONFIG_STAMP)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) -shared -Wl,-soname,libselfckpt.so.$(SONAME_MAJOR) \
		$(SC_LDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) -Wl,--as-needed $(SC_LDLIBS)

$(BUILD)/lib/libselfckpt.so: $(LIB_SO)
	$(Q)ln -sf libselfckpt.so.$(SONAME_MAJOR) $@

# The library selfckpt-run --cuda=driver preloads: no cu* entry points (cuda/lib/driver-mode.map).
LIB_DRIVER_SO := $(BUILD)/lib/libselfckpt-driver.so.$(SONAME_MAJOR)
lib: $(LIB_DRIVER_SO)
test-progs: $(LIB_DRIVER_SO) # tests/cli/test_driver.c runs selfckpt-run --cuda=driver
$(LIB_DRIVER_SO): $(LIB_OBJS) $(LIB_SO_OBJS) cuda/lib/driver-mode.map $(CUDA_CONFIG_STAMP)
	$(Q)mkdir -p $(@D)
	$(call quiet,LD,$@)$(CC) -shared -Wl,-soname,libselfckpt-driver.so.$(SONAME_MAJOR) \
		-Wl,--version-script=cuda/lib/driver-mode.map $(SC_LDFLAGS) $(LDFLAGS) -o $@ \
		$(filter %.o,$^) -Wl,--as-needed $(SC_LDLIBS)

# A static link pulls the CUDA module's hooks in even where the program calls no cu* function
# of the library: it may load the CUDA driver itself, and its checkpoint must see that.
PC_STATIC_FLAGS := $(if $(filter 1,$(WITH_CUDA)),-Wl$(comma)-u$(comma)sc_cuda_hooks_install)

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
	install -m 644 $(wildcard $(PUBLIC_INCLUDE)/*.h) $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 $(BUILD)/lib/pkgconfig/selfckpt.pc $(DESTDIR)$(LIBDIR)/pkgconfig/
	install -m 755 $(TOOLS) $(DESTDIR)$(BINDIR)/

clean:
	rm -rf $(BUILD) $(BUILD)-san

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
