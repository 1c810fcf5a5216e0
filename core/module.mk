# core/: the process and the public interface.
LIB_SRCS += core/version.c
