/* SPDX-License-Identifier: MIT */
/*
 * sc_format.h - the selfckpt image file: a streaming writer and a validating
 * reader. spec/image-format.md is the normative description; the constants
 * below are its numbers.
 *
 * An image is a header, a stream of records, an END record whose payload is
 * the index of the records, and a trailer:
 *
 *   header | record 0 | record 1 | ... | END (index) | trailer
 *
 * A record is a header, uncompressed metadata ("meta": what a reader needs to
 * plan, e.g. a segment's address and page runs) and a payload cut into chunks
 * of 2^chunk_shift raw bytes, each compressed on its own and carrying the
 * XXH3-64 of its raw bytes.
 *
 * Errors: -errno, or -SELFCKPT_E* with a message (selfckpt_last_error()) that
 * names the file, the record and the offset.
 */
#ifndef SC_FORMAT_H
#define SC_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "selfckpt_errors.h"

#define SC_FORMAT_MAJOR 1
#define SC_FORMAT_MINOR 6

#define SC_MAGIC "\x89SCKPT\r\n"      /* 8 bytes, at offset 0 */
#define SC_MAGIC_LEN 8
#define SC_TRAILER_MAGIC "SCKPTEND" /* 8 bytes, first in the trailer */

#define SC_HEADER_SIZE 144        /* header size written by this version */
#define SC_HEADER_MAX 4096        /* largest header_size a reader accepts */
#define SC_RECORD_HEADER_SIZE 48
#define SC_CHUNK_HEADER_SIZE 16
#define SC_INDEX_ENTRY_SIZE 40
#define SC_TRAILER_SIZE 40

#define SC_CHUNK_SHIFT_MIN 12     /* 4 KiB */
#define SC_CHUNK_SHIFT_MAX 26     /* 64 MiB */
#define SC_CHUNK_SHIFT_DEFAULT 20 /* 1 MiB */
#define SC_META_MAX (16u << 20)   /* largest record metadata */

#define SC_ARCH_X86_64 62 /* ELF e_machine values */

/* Record types. Values are part of the image format; see spec §9. */
enum sc_record_type {
	SC_REC_PROCESS = 1,  /* process-wide state */
	SC_REC_THREAD = 2,   /* one thread's registers and kernel state */
	SC_REC_SEGMENT = 3,  /* one memory mapping and its stored pages */
	SC_REC_FD = 4,       /* one file descriptor */
	SC_REC_SIGNALS = 5,  /* signal actions, blocked and pending sets */
	SC_REC_CUDA_LOG = 6, /* the CUDA resource log */
	SC_REC_DEVMEM = 7,   /* one block of device memory */
	SC_REC_TIMERS = 8,   /* interval and POSIX timers (1.2) */
	SC_REC_LOCKS = 9,    /* file locks and leases (1.2) */
	SC_REC_CUDA_DRIVER = 10, /* the CUDA driver's process checkpoint is in memory (1.4) */
	SC_REC_SYSV = 11,    /* one System V IPC object: segment, semaphore set, queue (1.5) */
	SC_REC_PARENT = 12,  /* the image an incremental image completes (1.7) */
	SC_REC_END = 0xFFFF, /* end of records; payload is the index */
};

#define SC_RF_REQUIRED 0x0001u /* a reader that does not know the type must refuse */
#define SC_RF_KNOWN_MASK 0x0001u

/* Header flags: the low 32 bits may be ignored by a reader that does not know
 * them, the high 32 bits must be understood or the image refused. */
#define SC_HF_COMPAT_MASK 0x00000000ffffffffull
#define SC_HF_INCREMENTAL (1ull << 32) /* 1.7: the image leaves memory to its parent */
#define SC_HF_KNOWN_INCOMPAT SC_HF_INCREMENTAL
#define SC_FORMAT_MINOR_INCREMENTAL 7 /* the minor of an incremental image */

struct sc_header {
	uint16_t major, minor;
	uint32_t header_size;
	uint32_t arch;      /* ELF e_machine */
	uint32_t page_size;
	uint64_t flags;
	uint64_t created_ns; /* CLOCK_REALTIME, nanoseconds */
	char producer[33];   /* NUL-terminated */
	char kernel[65];     /* uname release, NUL-terminated */
};

/* A record as the reader hands it out. */
struct sc_record {
	uint32_t type;
	uint16_t flags;
	uint8_t codec;       /* codec the writer asked for (chunks may be raw) */
	uint8_t chunk_shift;
	uint32_t seq;        /* 0-based position in the image */
	uint64_t offset;     /* file offset of the record header */
	uint64_t raw_len;    /* payload bytes after decoding */
	const void *meta;    /* valid until the next sc_reader_next() */
	uint32_t meta_len;
};

struct sc_index_entry {
	uint64_t offset;     /* file offset of the record header */
	uint64_t raw_len;
	uint64_t stored_len; /* bytes the record occupies in the file */
	uint32_t type;
	uint32_t meta_len;
	uint16_t flags;
	uint8_t codec;
	uint8_t chunk_shift;
};

/**
 * sc_record_type_name() - "process", "segment", ... for a type this version
 * knows, NULL otherwise.
 */
const char *sc_record_type_name(uint32_t type);

/* ---- little-endian field access: never cast a struct onto file bytes ---- */

static inline uint16_t sc_get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t sc_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t sc_get_le64(const uint8_t *p)
{
	return (uint64_t)sc_get_le32(p) | (uint64_t)sc_get_le32(p + 4) << 32;
}

static inline void sc_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void sc_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

static inline void sc_put_le64(uint8_t *p, uint64_t v)
{
	sc_put_le32(p, (uint32_t)v);
	sc_put_le32(p + 4, (uint32_t)(v >> 32));
}

/* ---- writer ---- */

struct sc_writer;

struct sc_write_opts {
	int level;            /* SC_LEVEL_STORE, or a zstd level */
	unsigned threads;     /* compression threads; 0 = all online CPUs */
	unsigned writers;     /* chunk writes to a regular file at once (at most threads); 0 = 1 */
	bool no_writeback;    /* leave the image in the page cache until the final fsync() */
	unsigned chunk_shift; /* 0 = SC_CHUNK_SHIFT_DEFAULT */
	uint64_t created_ns;  /* 0 = now; fixed values make reproducible images */
	const char *producer; /* NULL = "selfckpt <version>" */
	const char *kernel;   /* NULL = uname release */
	bool incremental;     /* flag SC_HF_INCREMENTAL, minor 7: the image has a parent */
};

/** sc_write_opts_init() - defaults: SC_LEVEL_DEFAULT, all CPUs, one writer, writeback. */
void sc_write_opts_init(struct sc_write_opts *o);

/**
 * sc_writer_new() - start an image on @fd and write its header.
 * @out: receives the writer.
 * @fd: any writable descriptor, a pipe too: a pipe is written in order; a regular
 *      file (not O_APPEND) is written at each chunk's offset, from pool threads
 *      (@o->writers of them at once, default 1), with the same result.
 * @name: the file's name, for messages.
 * @o: options, NULL for defaults.
 *
 * The writer does not own @fd. After any failure every later call returns the
 * same error (the image is then unusable).
 * Return: 0, -errno, or -SELFCKPT_EUSAGE for bad options.
 */
int sc_writer_new(struct sc_writer **out, int fd, const char *name, const struct sc_write_opts *o);

/**
 * sc_writer_begin() - start a record.
 * @type: enum sc_record_type, or another value for a record this version does
 *        not define (readers skip it unless @flags has SC_RF_REQUIRED).
 * @meta: metadata stored uncompressed; copied; @meta_len at most SC_META_MAX.
 * @raw_len: exact number of payload bytes sc_writer_append() will be given.
 */
int sc_writer_begin(struct sc_writer *w, uint32_t type, uint16_t flags, const void *meta,
		    uint32_t meta_len, uint64_t raw_len);

/**
 * sc_writer_append() - add payload bytes to the current record.
 *
 * Whole chunks are compressed in place: @data must stay unchanged until
 * sc_writer_end() returns.
 */
int sc_writer_append(struct sc_writer *w, const void *data, size_t n);

/** sc_writer_end() - finish the current record; fails unless raw_len bytes came. */
int sc_writer_end(struct sc_writer *w);
/**
 * sc_writer_end_lent() - as sc_writer_end(), but the data given to
 * sc_writer_append() may still be being written when it returns: it stays
 * unchanged until sc_writer_returned(@lent) says it is out. For a caller with
 * another buffer to fill meanwhile.
 */
int sc_writer_end_lent(struct sc_writer *w, uint64_t *lent);
/**
 * sc_writer_returned() - is the data of the records ended with @lent and
 * before out of the writer's hands? 0: yes (with @wait, once it is); 1: not
 * yet; or the writer's error.
 */
int sc_writer_returned(struct sc_writer *w, uint64_t lent, bool wait);

/** sc_writer_record() - begin, append and end in one call. */
int sc_writer_record(struct sc_writer *w, uint32_t type, uint16_t flags, const void *meta,
		     uint32_t meta_len, const void *payload, uint64_t len);

/** sc_writer_finish() - write the END record (the index) and the trailer. */
int sc_writer_finish(struct sc_writer *w);

/** sc_writer_incremental() - is the image being written incremental (R-HDR-8)? */
bool sc_writer_incremental(const struct sc_writer *w);

/** sc_writer_bytes() - bytes written to the descriptor so far. */
uint64_t sc_writer_bytes(const struct sc_writer *w);

/**
 * sc_writer_identity() - what names a finished image: its creation time and
 * its file checksum (the trailer's); its size is sc_writer_bytes().
 */
void sc_writer_identity(const struct sc_writer *w, uint64_t *created_ns, uint64_t *file_sum);

/** sc_writer_free() - release the writer (not the descriptor); NULL is a no-op. */
void sc_writer_free(struct sc_writer *w);

/* ---- creating an image file without ever destroying the previous one ---- */

struct sc_atomic_file {
	int fd;
	char *path;     /* final name */
	char *tmp_path; /* where the bytes go until committed */
};

/**
 * sc_atomic_open() - create a temporary file, mode 0600, next to @path
 * (@path.selfckpt-tmp.PID.XXXXXX), locked until it is committed or aborted.
 * Return: 0 with @f->fd open for writing, or -errno.
 */
int sc_atomic_open(struct sc_atomic_file *f, const char *path);

/**
 * sc_atomic_commit() - fsync the file, rename it over @path, fsync the
 * directory, close. On failure the temporary file is removed and @path is
 * left as it was.
 */
int sc_atomic_commit(struct sc_atomic_file *f);

/** sc_atomic_abort() - close and remove the temporary file. */
void sc_atomic_abort(struct sc_atomic_file *f);

/**
 * sc_atomic_clean_dir() - remove from @dir the temporary files that
 * sc_atomic_open() made there for writers that are gone (killed, or ended
 * before they committed or aborted); those of live writers stay (on a file
 * system without locks, a file stays while the process named in it lives or
 * for a minute after its last write). sc_atomic_open() does it for its own
 * directory first. Only files of the caller's effective user are removed.
 * Return: how many were removed, or -errno when @dir cannot be read.
 */
int sc_atomic_clean_dir(const char *dir);

/* ---- reader ---- */

struct sc_reader;

#define SC_RD_STREAM 0x1u      /* read sequentially even when the file can seek */
#define SC_RD_ALL_RECORDS 0x2u /* hand out unknown optional records instead of skipping them */

struct sc_read_opts {
	unsigned flags;   /* SC_RD_* */
	unsigned threads; /* decompression threads; 0 = all online CPUs */
};

/**
 * sc_reader_open() - open an image and check its header.
 * @path: file name, or "-" for standard input (read as a stream).
 * @o: options, NULL for defaults.
 *
 * A seekable file also has its trailer and index read and checked here, so a
 * truncated image is refused before any record is handed out. A stream is
 * checked as it is read; its end (index, trailer, whole-file checksum) is
 * checked by the sc_reader_next() call that returns 0.
 * Return: 0, -errno (-ENOENT, -EISDIR, ...), or -SELFCKPT_E*.
 */
int sc_reader_open(struct sc_reader **out, const char *path, const struct sc_read_opts *o);

/** sc_reader_open_fd() - as sc_reader_open() on a descriptor the reader does not own. */
int sc_reader_open_fd(struct sc_reader **out, int fd, const char *name,
		      const struct sc_read_opts *o);

/** sc_reader_free() - NULL is a no-op. */
void sc_reader_free(struct sc_reader *r);

/**
 * sc_reader_set_threads() - decode the payloads read from now on with @threads
 * threads (0 = all online CPUs), replacing the reader's current ones.
 *
 * A reader opened with one thread starts none, so a caller that must stay
 * single-threaded while it reads the metadata (the restorer: growing the
 * descriptor table of a multi-threaded process waits for an RCU grace period)
 * opens it so and calls this before reading the payloads. Called between reads.
 * Return: 0, or -errno when the threads cannot be started (the reader then has
 * none and must be freed).
 */
int sc_reader_set_threads(struct sc_reader *r, unsigned threads);

const struct sc_header *sc_reader_header(const struct sc_reader *r);

/**
 * sc_reader_file_identity() - a seekable image's size and the file checksum
 * its trailer holds (-SELFCKPT_EUSAGE for a stream).
 */
int sc_reader_file_identity(const struct sc_reader *r, uint64_t *size, uint64_t *file_sum);
const char *sc_reader_name(const struct sc_reader *r);
bool sc_reader_seekable(const struct sc_reader *r);

/**
 * sc_reader_next() - move to the next record and read its header and meta.
 *
 * The rest of the previous record's payload is skipped (in a stream: read and
 * verified). Unknown optional records are skipped unless SC_RD_ALL_RECORDS;
 * an unknown required record is refused with -SELFCKPT_EUNKNOWN.
 * Return: 1 with @rec filled, 0 after the last record, or a negative error.
 */
int sc_reader_next(struct sc_reader *r, struct sc_record *rec);

/**
 * sc_reader_read() - the next @n payload bytes of the current record.
 *
 * Every chunk is checked against its XXH3-64 before a byte of it is copied
 * out; chunks are decoded on all reader threads.
 * Return: 0, or a negative error (reading past raw_len is -SELFCKPT_EUSAGE).
 */
int sc_reader_read(struct sc_reader *r, void *dst, size_t n);

/**
 * sc_reader_read_all() - the whole payload of the current record @rec into a
 * buffer of its own, *@data (realloc'd; the caller frees it), *@len bytes
 * (both 0/NULL before the call). Read in steps, the buffer growing only as
 * verified bytes arrive, so that a false raw_len costs no more memory than the
 * image holds (R-SAFE-2).
 * Return: 0, -ENOMEM reported, or a negative error as sc_reader_read().
 */
int sc_reader_read_all(struct sc_reader *r, const struct sc_record *rec, void **data,
		       size_t *len);

/* One destination of a scattered payload read. */
struct sc_piece {
	void *dst;
	uint64_t len;
};

/**
 * sc_reader_read_pieces() - the next payload bytes of the current record,
 * spread over @pieces in order: pieces[0].len bytes to pieces[0].dst, then
 * the next piece, and so on; the read is the sum of their lengths.
 *
 * For content that lies in many places, such as a memory segment's stored runs:
 * a chunk that falls inside one piece is decoded straight into it, any other
 * is decoded into a buffer and copied out to its pieces on the thread that
 * decoded it, once its checksum matched. A piece whose dst is NULL takes its
 * bytes nowhere: they are decoded and checked, and dropped.
 * Return: 0, or a negative error as sc_reader_read().
 */
int sc_reader_read_pieces(struct sc_reader *r, const struct sc_piece *pieces, size_t n);

/**
 * sc_reader_skip() - skip the rest of the current record's payload.
 * @verify: decode and check every chunk skipped (a stream always reads them).
 */
int sc_reader_skip(struct sc_reader *r, bool verify);

/**
 * sc_reader_index() - the index: of a seekable image at any time, of a stream
 * once sc_reader_next() returned 0 (-SELFCKPT_EUSAGE before).
 */
int sc_reader_index(struct sc_reader *r, const struct sc_index_entry **entries, size_t *n);

/** sc_reader_seek() - make the next sc_reader_next() return record @i (seekable only). */
int sc_reader_seek(struct sc_reader *r, size_t i);

/**
 * sc_reader_verify_file() - check the whole-file XXH3-64 of a seekable image
 * (a stream checks it at its end by itself).
 */
int sc_reader_verify_file(struct sc_reader *r);

/**
 * sc_reader_end_offset() - offset of the END record: of a seekable image at any
 * time, of a stream once sc_reader_next() returned 0 (0 before).
 */
uint64_t sc_reader_end_offset(const struct sc_reader *r);

/**
 * sc_reader_size() - size of a seekable image, or the bytes a stream has
 * delivered so far (its size, once sc_reader_next() returned 0).
 */
uint64_t sc_reader_size(const struct sc_reader *r);

/** sc_reader_skipped() - unknown optional records skipped so far. */
uint64_t sc_reader_skipped(const struct sc_reader *r);

/**
 * sc_prefault_write() - fault in the whole pages of @len bytes at @p, writable,
 * in one call, before they are filled: for fresh memory (a restore) that costs
 * less than a fault per page. Only a hint: kernels before 5.14 refuse it, and
 * the pages then fault in as they are written.
 */
void sc_prefault_write(void *p, size_t len);

#endif /* SC_FORMAT_H */
