/* SPDX-License-Identifier: MIT */
/*
 * gpu_guard.c - a process in which a CUDA driver works, checkpointed where no
 * CUDA support of selfckpt's takes part (a library built without the CUDA
 * toolkit, for embedded boards and CPU containers; a static link that left
 * the CUDA module out), is refused. Its GPU state lives in the driver's device
 * files and mappings, which an image never holds: the image would restore a
 * process whose driver has lost its GPU. Where the CUDA module is in, its
 * hooks handle such a process (cuda/lib/driver_ckpt.c) and this is not asked.
 */
#include "core/checkpoint_internal.h"
#include "core/sc_core.h"
#include "format/sc_log.h"
#include "selfckpt.h"

/*
 * The mappings tell: a driver that holds GPU state has mapped its control
 * and device memory. Its descriptors are not counted here: reading every
 * descriptor's link would cost a large table milliseconds at each checkpoint.
 */
int sc_gpu_guard(void)
{
	unsigned maps = sc_nvidia_device_maps();

	if (!maps)
		return 0;
	return sc_err(SELFCKPT_EDRIVER, "this process uses an NVIDIA GPU (%u mappings of "
		      "/dev/nvidia*), whose state no image can hold, and it has no CUDA support of "
		      "selfckpt's (a library built without the CUDA toolkit, or a static link "
		      "without the flags of 'pkg-config --static selfckpt')", maps);
}
