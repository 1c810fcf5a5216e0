/* SPDX-License-Identifier: MIT */
/*
 * cuda_state - GPU state across a checkpoint, on whatever CUDA device the
 * proxy loads (the software device on CI). A created context with a limit, a
 * stream with a priority, an event, a module given as bytes, a module global,
 * device memory in the arena (a block of its own, a sub-allocation, 64 MiB
 * never written), a device pointer stored in device memory and followed by a
 * kernel, device pointers kept in a host structure, pinned host memory the
 * CPU writes and the GPU reads, a CUDA array with a texture object, and a
 * sub-allocation freed before the checkpoint while it still held data: the
 * image leaves free slots out, so the same slot allocated again after a
 * restore reads zero (in a run that never checkpoints, the old data). 192 MiB
 * of pinned host memory allocated and freed before the checkpoint: a restart
 * need not pin it again.
 *
 * Arguments after IMAGE DIR: the kernel library (tests/progs/cuda_kernels.c).
 * Standard output: one line per step with digests of every piece of state;
 * the pointers and the texture object's value, which must not change.
 */
#include <cuda.h>

#include "prog.h"

#define STEPS 6
#define A_WORDS (3u << 18)   /* 3 MiB: a block of its own */
#define B_BYTES 1000         /* sub-allocated */
#define Z_BYTES (64u << 20)  /* allocated, cleared, never written again */
#define FREED_PINNED (192u << 20)
#define TEX_W 64
#define TEX_H 64

#define CK(call) check_call((call), #call, __LINE__)

static void check_call(CUresult r, const char *what, int line)
{
	const char *name = NULL;

	if (r == CUDA_SUCCESS)
		return;
	cuGetErrorName(r, &name);
	prog_die("line %d: %s: %s", line, what, name ? name : "?");
}

struct state {
	CUcontext ctx;
	CUstream stream;
	CUevent done;
	CUmodule mod;
	CUfunction step, chase, tex_sum;
	CUdeviceptr counter, a, b, p, z, out, freed;
	CUarray arr;
	CUtexObject tex;
	uint32_t *pinned;  /* cuMemAllocHost */
	size_t counter_size;
};

static uint64_t fnv(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static void load_module(struct state *s, const char *kernels)
{
	char text[1024];

	snprintf(text, sizeof(text), ".version 8.0\n.target sm_90\n// softcuda library %s\n"
		 ".entry step (8, 8, 8)\n.entry chase (8)\n.entry tex_sum (8, 8, 4, 4)\n"
		 "// softcuda global counter 4\n", kernels);
	CK(cuModuleLoadData(&s->mod, text));
	memset(text, 0, sizeof(text)); /* the library must have kept its own copy */
	CK(cuModuleGetFunction(&s->step, s->mod, "step"));
	CK(cuModuleGetFunction(&s->chase, s->mod, "chase"));
	CK(cuModuleGetFunction(&s->tex_sum, s->mod, "tex_sum"));
	CK(cuModuleGetGlobal(&s->counter, &s->counter_size, s->mod, "counter"));
}

static void make_texture(struct state *s)
{
	CUDA_ARRAY_DESCRIPTOR ad = { TEX_W, TEX_H, CU_AD_FORMAT_FLOAT, 1 };
	CUDA_MEMCPY2D c = { 0 };
	CUDA_RESOURCE_DESC rd = { 0 };
	CUDA_TEXTURE_DESC td = { 0 };
	static float img[TEX_H][TEX_W];

	for (int y = 0; y < TEX_H; y++)
		for (int x = 0; x < TEX_W; x++)
			img[y][x] = (float)(x * 3 + y) * 0.5f;
	CK(cuArrayCreate(&s->arr, &ad));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = img;
	c.srcPitch = sizeof(img[0]);
	c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	c.dstArray = s->arr;
	c.WidthInBytes = sizeof(img[0]);
	c.Height = TEX_H;
	CK(cuMemcpy2D(&c));
	rd.resType = CU_RESOURCE_TYPE_ARRAY;
	rd.res.array.hArray = s->arr;
	td.addressMode[0] = td.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
	td.filterMode = CU_TR_FILTER_MODE_POINT;
	CK(cuTexObjectCreate(&s->tex, &rd, &td, NULL));
}

static void setup(struct state *s, const char *kernels)
{
	CUdevice dev;
	int least, greatest;
	uint32_t zero = 0;
	void *freed_pinned;

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuCtxCreate(&s->ctx, NULL, 0, dev));
	CK(cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 1 << 20));
	CK(cuCtxGetStreamPriorityRange(&least, &greatest));
	CK(cuStreamCreateWithPriority(&s->stream, CU_STREAM_NON_BLOCKING, greatest));
	CK(cuEventCreate(&s->done, CU_EVENT_DEFAULT));
	load_module(s, kernels);
	CK(cuMemcpyHtoD(s->counter, &zero, sizeof(zero)));
	CK(cuMemAlloc(&s->a, A_WORDS * 4));
	CK(cuMemAlloc(&s->b, B_BYTES));
	CK(cuMemAlloc(&s->p, 16));
	CK(cuMemAlloc(&s->z, Z_BYTES));
	CK(cuMemAlloc(&s->out, 256));
	CK(cuMemAlloc(&s->freed, B_BYTES)); /* the slot after b, in b's slab */
	CK(cuMemsetD8(s->freed, 0xab, B_BYTES));
	CK(cuMemFree(s->freed));
	CK(cuMemsetD32(s->a, 0x12345678u, A_WORDS));
	CK(cuMemsetD8(s->b, 0, B_BYTES));
	CK(cuMemsetD8(s->z, 0, Z_BYTES));
	CK(cuMemcpyHtoD(s->p, &s->b, sizeof(s->b))); /* a device pointer in device memory */
	CK(cuMemAllocHost((void **)&s->pinned, 64 << 10));
	CK(cuMemAllocHost(&freed_pinned, FREED_PINNED));
	CK(cuMemFreeHost(freed_pinned));
	make_texture(s);
}

static void step(struct state *s, int i)
{
	uint64_t n = A_WORDS;
	void *sp[] = { &s->a, &n, &s->counter }, *cp[] = { &s->p };
	int w = TEX_W, h = TEX_H;
	void *tp[] = { &s->tex, &s->out, &w, &h };
	uint32_t b0 = 0, counter = 0;
	float sum = 0;

	/* the CPU writes pinned memory, the GPU reads it from there */
	for (int k = 0; k < 1024; k++)
		s->pinned[k] = (uint32_t)(k * 31 + i);
	CK(cuMemcpyHtoDAsync(s->a, s->pinned, 4096, s->stream));
	CK(cuLaunchKernel(s->step, 1, 1, 1, 1, 1, 1, 0, s->stream, sp, NULL));
	CK(cuLaunchKernel(s->chase, 1, 1, 1, 1, 1, 1, 0, s->stream, cp, NULL));
	CK(cuLaunchKernel(s->tex_sum, 1, 1, 1, 1, 1, 1, 0, s->stream, tp, NULL));
	CK(cuEventRecord(s->done, s->stream));
	CK(cuEventSynchronize(s->done));
	CK(cuMemcpyDtoHAsync(s->pinned + 4096, s->a, A_WORDS * 4 > 65536 - 16384 ?
			     32768 : A_WORDS * 4, s->stream));
	CK(cuStreamSynchronize(s->stream));
	CK(cuMemcpyDtoH(&b0, s->b, 4));
	CK(cuMemcpyDtoH(&counter, s->counter, 4));
	CK(cuMemcpyDtoH(&sum, s->out, 4));
	printf("step %d: a %016llx b %u counter %u tex %.1f\n", i,
	       (unsigned long long)fnv(s->pinned + 4096, 32768), b0, counter, sum);
}

/* The freed slot again, right after the first checkpoint: see the top of this file. */
static void check_freed_slot(struct state *s, const struct prog *p)
{
	uint8_t got[B_BYTES], want = p->image ? 0 : 0xab;
	CUdeviceptr again;
	size_t off = 0;

	CK(cuMemAlloc(&again, B_BYTES));
	CK(cuMemcpyDtoH(got, again, B_BYTES));
	CK(cuMemFree(again));
	while (off < B_BYTES && got[off] == want)
		off++;
	prog_check("a slot freed before the checkpoint is allocated again", again == s->freed,
		   "at %llx, not %llx", (unsigned long long)again, (unsigned long long)s->freed);
	prog_check("its old bytes are not in the image", off == B_BYTES,
		   "byte %zu is 0x%02x, expected 0x%02x", off, got[off < B_BYTES ? off : 0], want);
}

static void check_zero(struct state *s)
{
	static uint8_t z[Z_BYTES];
	size_t nonzero = 0;

	CK(cuMemcpyDtoH(z, s->z, Z_BYTES));
	for (size_t i = 0; i < Z_BYTES; i++)
		nonzero += z[i] != 0;
	prog_check("64 MiB of zeros", nonzero == 0, "%zu bytes not zero", nonzero);
}

int main(int argc, char **argv)
{
	static struct state s;
	struct prog p;
	struct { CUdeviceptr a, b; } kept;

	prog_init(&p, argc, argv);
	if (p.argc != 1)
		prog_die("usage: cuda_state IMAGE|- DIR KERNEL_LIBRARY");
	setup(&s, p.argv[0]);
	kept.a = s.a;
	kept.b = s.b;
	printf("pointers %llx %llx %llx %llx, texture %llu\n", (unsigned long long)s.a,
	       (unsigned long long)s.b, (unsigned long long)s.z, (unsigned long long)s.counter,
	       (unsigned long long)s.tex);
	for (int i = 1; i <= STEPS; i++) {
		step(&s, i);
		if (i == 3) {
			prog_checkpoint(&p, 1);
			check_freed_slot(&s, &p);
		}
		if (i == 5)
			prog_checkpoint(&p, 2);
	}
	check_zero(&s);
	prog_check("pointers kept in host memory", kept.a == s.a && kept.b == s.b, "changed");
	CK(cuCtxSynchronize());
	CK(cuCtxDestroy(s.ctx));
	return 0;
}
