# core/restore/: the restore engine. selfckpt-restore (cli/restore.c) is a main over it.
#   stage 1, in the loader: restore.c (the order of the steps), restore_load.c, restore_ids.c,
#     restore_probe.c, restore_sysv.c, restore_timers.c, restore_plan.c, restore_jump.c, and
#     the descriptors (fds_restore.c, fd_place.c, fd_objects_restore.c, fd_socket_restore.c,
#     fd_owner_restore.c)
#   stage 2, the restorer blob: restorer_rt.c, restorer_timers_rt.c (freestanding)
#   the restored process's last steps: restart.c, in the library
# The descriptors' code is in the library too, where the tests call it.
LIB_SRCS += $(addprefix core/restore/,fds_restore.c fd_place.c fd_objects_restore.c \
	fd_socket_restore.c fd_owner_restore.c restart.c tree_shared.c)
RESTORE_ENGINE_OBJS := $(addprefix $(BUILD)/obj/core/restore/,restore.o restore_load.o restore_chain.o \
	restore_plan.o restore_jump.o restore_ids.o restore_probe.o restore_timers.o \
	restore_sysv.o tree_restore.o restorer_blob.o)

# The restorer blob: freestanding, position-independent, linked flat at 0 and
# embedded in selfckpt-restore, which copies it wherever the image leaves room.
BLOB_CFLAGS := $(SC_RT_CFLAGS) -fPIE -Os -fno-jump-tables -fno-asynchronous-unwind-tables \
	-fvisibility=hidden -mno-red-zone
BLOB_DIR := $(BUILD)/obj/core/restore
BLOB_OBJ := $(BLOB_DIR)/restorer_blob_rt.o $(BLOB_DIR)/restorer_timers_blob_rt.o
BLOB_ELF := $(BLOB_DIR)/restorer_blob.elf
BLOB_BIN := $(BLOB_DIR)/restorer_blob.bin

$(BLOB_OBJ): $(BLOB_DIR)/%_blob_rt.o: core/restore/%_rt.c | $(COMPILE_DEPS)
	$(Q)mkdir -p $(@D)
	$(call quiet,CC,$<)$(CC) $(CPPFLAGS) $(call includes_of,$<) $(BLOB_CFLAGS) -c -o $@ $<

$(BLOB_ELF): $(BLOB_OBJ) core/restore/restorer.lds
	$(call quiet,LD,$@)$(LD) -T core/restore/restorer.lds -o $@ $(BLOB_OBJ)
	$(Q)if readelf -r $(BLOB_OBJ) | grep -qE 'R_X86_64_(64|32|32S|GOT)'; then \
		echo "restorer blob needs absolute relocations:"; readelf -r $(BLOB_OBJ); exit 1; fi

$(BLOB_BIN): $(BLOB_ELF)
	$(call quiet,BIN,$@)objcopy -O binary $< $@

$(BLOB_DIR)/restorer_blob.o: core/restore/restorer_blob.S $(BLOB_BIN)
	$(call quiet,AS,$@)$(CC) -c -DSC_BLOB_BIN='"$(BLOB_BIN)"' -o $@ $<
