# format/: the image file, its writer and its reader.
LIB_SRCS += format/parent_record.c format/error.c format/array.c format/record_names.c format/encode.c format/atomic_replace.c format/writer.c \
	format/writer_out.c format/reader.c format/reader_io.c format/reader_index.c \
	format/reader_chunks.c
