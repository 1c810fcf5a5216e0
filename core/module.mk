# core/: the process - its memory, threads, descriptors and kernel objects, the checkpoint
# and its triggers - and the public interface (core/include/). The restore engine is in
# core/restore/ (its own module.mk).
LIB_SRCS += core/version.c core/records.c core/settings.c core/tool_path.c core/process_info.c core/exiting.c \
	core/nvidia_devices.c core/gpu_guard.c
# memory
LIB_SRCS += core/maps.c core/pages.c core/segments.c core/segment_vmflags.c core/segment_held.c \
	core/vmflags.c core/vmflags_cache.c core/vmflags_rt.c core/proc_status_rt.c core/own_mappings_rt.c core/zero_rt.c core/write_watch.c \
	core/written.c core/written_rt.c core/lineage.c
# threads, the stop and the snapshot
LIB_SRCS += core/ctx_rt.c core/thread_rt.c core/stop_rt.c core/pending_rt.c core/hold_rt.c \
	core/reaper_rt.c core/snapshot.c core/copier.c core/copier_rt.c core/shared_freeze.c \
	core/shared_freeze_rt.c core/checkpoint.c
# descriptors, at the freeze and in the records
LIB_SRCS += core/fds.c core/fds_freeze_rt.c core/fds_workers_rt.c core/fd_share_rt.c \
	core/fds_locks_rt.c core/fd_record.c core/fd_index.c core/fd_state.c core/fd_state_check.c \
	core/fd_objects.c core/fd_epoll_check.c core/inotify_paths.c core/locks.c core/locks_record.c
LIB_SRCS += core/fd_socket.c core/fd_socket_freeze_rt.c core/sock_defaults.c core/sock_diag.c \
	core/unix_diag_rt.c core/inet_diag.c
# timers, System V IPC
LIB_SRCS += core/timers.c core/timers_rt.c core/timers_record.c
LIB_SRCS += core/sysv_ipc.c core/sysv_collect.c core/sysv_freeze_rt.c core/sysv_record.c
# triggers: signals, the interval, selfckpt-run's options
LIB_SRCS += core/trigger_opts.c core/trigger.c core/trigger_chain.c core/trigger_rt.c
# the job: a process tree checkpointed at one instant into one set
LIB_SRCS += core/job.c core/job_rt.c core/job_save.c core/job_set.c core/job_share.c \
	core/job_files_rt.c core/unix_flight_rt.c core/proc_fds_rt.c \
	core/job_cpus.c
# In the shared library only: it defines sigaction() and signal(), which a
# static link would find twice.
LIB_SO_SRCS += core/interpose.c core/interpose_inotify.c core/interpose_sysv.c \
	core/interpose_exit.c core/interpose_exec.c
