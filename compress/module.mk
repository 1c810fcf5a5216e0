# compress/: zstd chunks and the worker pool.
LIB_SRCS += compress/chunk.c compress/pool.c
