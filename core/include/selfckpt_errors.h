/* SPDX-License-Identifier: MIT */
/*
 * selfckpt_errors.h - error codes shared by every selfckpt function and tool.
 *
 * Functions return 0 (or a positive result) on success and a negative value on
 * failure: either -errno for an operating-system failure, or -SELFCKPT_E* for
 * a failure selfckpt detected itself. The two ranges never meet: ours start
 * above 4095, the largest errno Linux can return. Values are append-only and
 * never reused, so a number in a log means the same thing in every version:
 * each is written out, and tests/format/test_errors.c fixes them (they are ABI).
 */
#ifndef SELFCKPT_ERRORS_H
#define SELFCKPT_ERRORS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the functions the shared library exports; everything else is hidden. */
#ifndef SELFCKPT_API
#define SELFCKPT_API __attribute__((visibility("default")))
#endif

enum selfckpt_error {
	SELFCKPT_EFIRST = 4096,
	SELFCKPT_EMAGIC = 4096,          /* not a selfckpt image (wrong magic) */
	SELFCKPT_EEMPTY = 4097,          /* the file is empty */
	SELFCKPT_EVERSION = 4098,        /* unsupported major format version */
	SELFCKPT_EARCH = 4099,           /* image made for another architecture or page size */
	SELFCKPT_ETRUNCATED = 4100,      /* the image ends early */
	SELFCKPT_EHEADER = 4101,         /* file header checksum mismatch */
	SELFCKPT_ERECORD = 4102,         /* record header or metadata checksum mismatch */
	SELFCKPT_ECHUNK = 4103,          /* chunk checksum mismatch */
	SELFCKPT_ECODEC = 4104,          /* a compressed chunk does not decode */
	SELFCKPT_EINDEX = 4105,          /* the index disagrees with the records */
	SELFCKPT_ETRAILER = 4106,        /* the trailer is damaged */
	SELFCKPT_EFILESUM = 4107,        /* whole-file checksum mismatch */
	SELFCKPT_ELENGTH = 4108,         /* a length or offset is out of bounds */
	SELFCKPT_EUNKNOWN = 4109,        /* an unknown required record or header flag */
	SELFCKPT_ERESERVED = 4110,       /* a reserved field is not zero */
	SELFCKPT_EUSAGE = 4111,          /* an API or tool was called the wrong way */
	SELFCKPT_EHOST = 4112,           /* this machine cannot take the image (kernel, files) */
	SELFCKPT_ECUDA = 4113,           /* the GPU or its proxy failed a CUDA call */
	SELFCKPT_EDRIVER = 4114,         /* the CUDA driver in the process holds GPU state no image can */
	SELFCKPT_EIPCNS = 4115,          /* System V objects, and no IPC namespace of the restore's own */
	SELFCKPT_ENOPARENT = 4116,       /* an incremental image's parent is missing or unreadable */
	SELFCKPT_EPARENT = 4117,         /* an incremental image's parent is another image, or damaged */
	SELFCKPT_ELAST = 4118            /* one past the last code; not an error */
};

/**
 * selfckpt_strerror() - describe an error code.
 * @err: a value returned by a selfckpt function: negative errno or -SELFCKPT_E*
 *       (the sign is ignored).
 *
 * Return: a static, human-readable string; never NULL.
 */
SELFCKPT_API const char *selfckpt_strerror(int err);

/**
 * selfckpt_last_error() - the full message of the last error on this thread.
 *
 * The message names the file, the place and the cause, for example
 * "checksum mismatch in 'job.sckpt' record 12 (segment) chunk 3 at offset 40960:
 * stored 0x..., computed 0x...".
 *
 * Return: a thread-local string, empty when no error was reported yet; valid
 * until the next selfckpt call on this thread.
 */
SELFCKPT_API const char *selfckpt_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* SELFCKPT_ERRORS_H */
