# core/: the process and the public interface.
LIB_SRCS += core/version.c core/records.c core/maps.c core/pages.c \
	core/fds.c core/fds_freeze_rt.c core/fds_locks_rt.c core/fd_share_rt.c core/fds_workers_rt.c core/locks.c core/locks_record.c core/shared_freeze.c core/shared_freeze_rt.c core/fd_record.c core/fds_restore.c core/fd_place.c core/tool_path.c core/fd_index.c \
	core/fd_state.c core/fd_state_check.c core/fd_objects.c core/fd_objects_restore.c core/fd_epoll_check.c core/inotify_paths.c \
	core/fd_socket.c core/fd_socket_freeze_rt.c core/fd_socket_restore.c core/sock_defaults.c core/sock_diag.c core/unix_diag.c core/inet_diag.c \
	core/snapshot.c core/copier.c core/copier_rt.c core/zero_rt.c core/reaper_rt.c core/hold_rt.c core/process_info.c core/segments.c core/checkpoint.c \
	core/timers.c core/timers_rt.c core/timers_record.c core/vmflags.c core/vmflags_rt.c core/segment_vmflags.c core/segment_held.c \
	core/restart.c core/settings.c core/skip_rt.c core/ctx_rt.c core/thread_rt.c core/stop_rt.c core/pending_rt.c \
	core/trigger_opts.c core/trigger.c core/trigger_rt.c \
	core/sysv_ipc.c core/sysv_collect.c core/sysv_freeze_rt.c core/sysv_record.c
LIB_SRCS += core/exiting.c
# In the shared library only: it defines sigaction() and signal(), which a
# static link would find twice.
LIB_SO_SRCS += core/interpose.c core/interpose_inotify.c core/interpose_sysv.c
