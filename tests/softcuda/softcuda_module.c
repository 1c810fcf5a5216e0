/* SPDX-License-Identifier: MIT */
/*
 * softcuda_module.c - modules and libraries: the image format (PTX text whose
 * comments carry what the software device needs, see README.md), kernel
 * libraries and module globals.
 *
 * The images are PTX so that whatever reads a module without the device (the
 * checkpoint tools) sees a format the real driver takes, targeting the
 * architecture its .target names; only this file reads the comments.
 *
 * Module globals live in one region at a fixed address (SOFTCUDA_GLOBAL_BASE,
 * default 0x6e0000000000) handed out by a bump allocator in 256-byte steps,
 * never reused: the same sequence of loads gives the same addresses in every
 * process, as the real driver's do with ASLR off. SOFTCUDA_GLOBAL_SHIFT moves
 * them all, so tests can provoke a mismatch after a restart.
 */
#include <sys/mman.h>
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "softcuda_internal.h"

#define SD_IMAGE_MAX (1 << 20)
#define SD_LINE_MAX 4096
#define SD_KERNEL_PREFIX "softk_"

struct sd_library {
	struct sd_obj obj;
	struct sd_module *mod;
};

/* What the text says, before anything is loaded or allocated. */
struct sd_image {
	struct sd_module *mod;
	char *library;
	unsigned line;
	char variant;		/* of .target: 0, 'a' or 'f' */
};

static int image_error(const struct sd_image *img, const char *what, const char *token)
{
	sd_log("module image line %u: %s%s%s%s", img->line, what, token ? " '" : "",
	       token ? token : "", token ? "'" : "");
	return -1;
}

static int parse_size(const char *token, size_t max, size_t *out)
{
	char *end;
	unsigned long long v;

	if (!token || !isdigit((unsigned char)*token))
		return -1;
	v = strtoull(token, &end, 10);
	if (*end || !v || v > max)
		return -1;
	*out = (size_t)v;
	return 0;
}

static int valid_name(const char *name)
{
	size_t i;

	if (!name || strlen(name) >= SD_NAME_MAX - sizeof(SD_KERNEL_PREFIX) ||
	    (!isalpha((unsigned char)*name) && *name != '_'))
		return 0;
	for (i = 1; name[i]; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '_')
			return 0;
	return 1;
}

static int name_taken(const struct sd_module *m, const char *name)
{
	unsigned i;

	for (i = 0; i < m->n_funcs; i++)
		if (!strcmp(m->funcs[i].name, name))
			return 1;
	for (i = 0; i < m->n_globals; i++)
		if (!strcmp(m->globals[i].name, name))
			return 1;
	return 0;
}

/* Each parameter at its natural alignment: its size rounded up to a power of two, at most 8. */
static size_t param_align(size_t size)
{
	size_t align = 1;

	while (align < size && align < 8)
		align <<= 1;
	return align;
}

static int parse_params(struct sd_image *img, struct sd_func *f, char **save)
{
	size_t size, offset = 0;
	char *token;

	while ((token = strtok_r(NULL, " \t(),", save))) {
		if (f->n_params == SD_MAX_PARAMS)
			return image_error(img, "too many kernel parameters", NULL);
		if (parse_size(token, 4096, &size))
			return image_error(img, "bad parameter size", token);
		offset = SD_ROUND_UP(offset, param_align(size));
		f->param_offset[f->n_params] = (unsigned)offset;
		f->param_size[f->n_params++] = (unsigned)size;
		offset += size;
		if (offset > SD_PARAM_BYTES_MAX)
			return image_error(img, "kernel parameters too large", NULL);
	}
	f->param_bytes = offset;
	return 0;
}

/* ".entry NAME (SIZE, ...)": the sizes of the parameters, in bytes. */
static int parse_kernel(struct sd_image *img, char **save)
{
	struct sd_module *m = img->mod;
	char *name = strtok_r(NULL, " \t(", save);
	struct sd_func *funcs, *f;

	if (!valid_name(name) || name_taken(m, name))
		return image_error(img, "bad or repeated kernel name", name);
	funcs = realloc(m->funcs, (m->n_funcs + 1) * sizeof(*funcs));
	if (!funcs)
		return image_error(img, "out of memory", NULL);
	m->funcs = funcs;
	f = &funcs[m->n_funcs++];
	memset(f, 0, sizeof(*f));
	f->mod = m;
	strcpy(f->name, name);
	return parse_params(img, f, save);
}

static int parse_global(struct sd_image *img, char **save, int managed)
{
	struct sd_module *m = img->mod;
	char *name = strtok_r(NULL, " \t", save);
	char *size = strtok_r(NULL, " \t", save);
	struct sd_global *globals, *g;
	size_t bytes;

	if (!valid_name(name) || name_taken(m, name))
		return image_error(img, "bad or repeated global name", name);
	if (parse_size(size, SD_GLOBAL_REGION / 2, &bytes) || strtok_r(NULL, " \t", save))
		return image_error(img, "bad global size", size);
	globals = realloc(m->globals, (m->n_globals + 1) * sizeof(*globals));
	if (!globals)
		return image_error(img, "out of memory", NULL);
	m->globals = globals;
	g = &globals[m->n_globals++];
	memset(g, 0, sizeof(*g));
	strcpy(g->name, name);
	g->size = bytes;
	g->managed = managed;
	return 0;
}

/* ".target sm_90", "sm_100a": the compute capability times ten, and the variant. */
static int parse_target(struct sd_image *img, char **save)
{
	char *token = strtok_r(NULL, " \t", save);
	char *end;
	long arch;

	if (img->mod->arch || !token || strncmp(token, "sm_", 3) ||
	    !isdigit((unsigned char)token[3]))
		return image_error(img, "bad or repeated .target", token);
	arch = strtol(token + 3, &end, 10);
	if ((*end && strcmp(end, "a") && strcmp(end, "f")) || arch < 10 || arch > 999 ||
	    strtok_r(NULL, " \t", save))
		return image_error(img, "bad .target", token);
	img->mod->arch = (int)arch;
	img->variant = *end;
	return 0;
}

/* ".version 8.0": the first line, as in every PTX text. */
static int parse_version(struct sd_image *img, char *word, char **save)
{
	char *version = strtok_r(NULL, " \t", save);
	char *end = NULL;

	if (word && !strcmp(word, ".version") && version && isdigit((unsigned char)*version)) {
		strtol(version, &end, 10);
		if (*end == '.' && isdigit((unsigned char)end[1]))
			strtol(end + 1, &end, 10);
		else
			end = NULL;
	}
	if (!end || *end || strtok_r(NULL, " \t", save))
		return image_error(img, "not a PTX text: the first line is not .version M.N",
				   NULL);
	return 0;
}

static int parse_library(struct sd_image *img, char *rest)
{
	size_t len;

	while (*rest == ' ' || *rest == '\t')
		rest++;
	len = strlen(rest);
	while (len && (rest[len - 1] == ' ' || rest[len - 1] == '\t'))
		rest[--len] = '\0';
	if (img->library || rest[0] != '/')
		return image_error(img, "library must be one absolute path", rest);
	img->library = strdup(rest);
	return img->library ? 0 : image_error(img, "out of memory", NULL);
}

/*
 * "// softcuda library PATH", "// softcuda global NAME SIZE", "// softcuda
 * managed NAME SIZE" (a __managed__ variable); other comments say nothing.
 */
static int parse_comment(struct sd_image *img, char *word, char **save)
{
	char *owner, *what;

	if (strcmp(word, "//"))
		return 0;
	owner = strtok_r(NULL, " \t", save);
	if (!owner || strcmp(owner, "softcuda"))
		return 0;
	what = strtok_r(NULL, " \t", save);
	if (what && !strcmp(what, "global"))
		return parse_global(img, save, 0);
	if (what && !strcmp(what, "managed"))
		return parse_global(img, save, 1);
	if (what && !strcmp(what, "library"))
		return parse_library(img, *save ? *save : "");
	return image_error(img, "unknown softcuda directive", what);
}

static int parse_line(struct sd_image *img, char *line)
{
	char *save = NULL;
	char *word = strtok_r(line, " \t", &save);

	if (img->line == 1)
		return parse_version(img, word, &save);
	if (!word)
		return 0;
	if (!strncmp(word, "//", 2))
		return parse_comment(img, word, &save);
	if (!strcmp(word, ".entry"))
		return parse_kernel(img, &save);
	if (!strcmp(word, ".target"))
		return parse_target(img, &save);
	return image_error(img, "unknown directive", word);
}

static int parse_image(struct sd_image *img, const char *text)
{
	char line[SD_LINE_MAX];
	const char *p = text;

	if (strnlen(text, SD_IMAGE_MAX) == SD_IMAGE_MAX)
		return image_error(img, "image larger than 1 MiB or not NUL-terminated", NULL);
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		img->line++;
		if (len >= sizeof(line))
			return image_error(img, "line too long", NULL);
		memcpy(line, p, len);
		line[len] = '\0';
		if (len && line[len - 1] == '\r')
			line[len - 1] = '\0';
		if (parse_line(img, line))
			return -1;
		p += len + (nl != NULL);
	}
	if (!img->line)
		return image_error(img, "empty image", NULL);
	if (!img->mod->arch)
		return image_error(img, "no .target", NULL);
	return 0;
}

/* The kernels are host functions softk_NAME of the library, found now. */
static CUresult resolve_kernels(struct sd_image *img)
{
	struct sd_module *m = img->mod;
	char symbol[SD_NAME_MAX + sizeof(SD_KERNEL_PREFIX)];
	unsigned i;

	if (!img->library)
		return m->n_funcs ? CUDA_ERROR_INVALID_IMAGE : CUDA_SUCCESS;
	m->dl = dlopen(img->library, RTLD_NOW | RTLD_LOCAL);
	if (!m->dl) {
		sd_log("cannot load kernel library: %s", dlerror());
		return CUDA_ERROR_INVALID_IMAGE;
	}
	for (i = 0; i < m->n_funcs; i++) {
		snprintf(symbol, sizeof(symbol), SD_KERNEL_PREFIX "%s", m->funcs[i].name);
		*(void **)&m->funcs[i].fn = dlsym(m->dl, symbol);
		if (!m->funcs[i].fn) {
			sd_log("no %s in '%s'", symbol, img->library);
			return CUDA_ERROR_INVALID_IMAGE;
		}
	}
	m->kernels = calloc(m->n_funcs ? m->n_funcs : 1, sizeof(*m->kernels));
	if (!m->kernels)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (i = 0; i < m->n_funcs; i++)
		m->kernels[i].func = &m->funcs[i];
	return CUDA_SUCCESS;
}

static void init_attrs(struct sd_module *m)
{
	int version = m->arch;
	unsigned i;

	for (i = 0; i < m->n_funcs; i++) {
		int *a = m->funcs[i].attrs;

		a[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = 1024;
		a[CU_FUNC_ATTRIBUTE_NUM_REGS] = 32;
		a[CU_FUNC_ATTRIBUTE_PTX_VERSION] = version;
		a[CU_FUNC_ATTRIBUTE_BINARY_VERSION] = version;
		a[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES] = SD_SHARED_PER_BLOCK;
		a[CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT] = -1;
	}
}

/* Address space for every global of the process, mapped at its fixed address once. */
static CUresult global_region_map(void)
{
	void *p;

	if (sd.global_mapped)
		return CUDA_SUCCESS;
	p = mmap((void *)sd.global_base, SD_GLOBAL_REGION, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != MAP_FAILED && (uintptr_t)p != sd.global_base)
		munmap(p, SD_GLOBAL_REGION);
	if (p == MAP_FAILED || (uintptr_t)p != sd.global_base) {
		sd_log("cannot map the global region at 0x%lx", (unsigned long)sd.global_base);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	sd.global_mapped = 1;
	return CUDA_SUCCESS;
}

/* All of a module's globals or none: a failed load leaves the next addresses as they were. */
static CUresult alloc_globals(struct sd_module *m)
{
	size_t used = sd.global_used, total = 0, offset;
	CUresult rc = m->n_globals ? global_region_map() : CUDA_SUCCESS;
	unsigned i;

	for (i = 0; rc == CUDA_SUCCESS && i < m->n_globals; i++) {
		offset = SD_ROUND_UP(used, SD_ALLOC_ALIGN);
		if (m->globals[i].size > SD_GLOBAL_REGION - sd.global_shift - offset) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		m->globals[i].addr = sd.global_base + sd.global_shift + offset;
		m->globals[i].id = sd.next_buffer_id++;
		used = offset + m->globals[i].size;
		total += m->globals[i].size;
	}
	if (rc == CUDA_SUCCESS)
		rc = sd_mem_charge(m->device, total);
	if (rc == CUDA_SUCCESS)
		sd.global_used = used;
	return rc;
}

static void module_release(struct sd_module *m, int charged)
{
	unsigned i;

	if (charged)
		for (i = 0; i < m->n_globals; i++)
			sd_mem_uncharge(m->device, m->globals[i].size);
	if (m->dl)
		dlclose(m->dl);
	free(m->funcs);
	free(m->kernels);
	free(m->globals);
	free(m);
}

void sd_module_free(struct sd_obj *obj)
{
	sd_obj_del(obj);
	module_release(sd_container(obj, struct sd_module, obj), 1);
}

/*
 * The driver's rule for PTX, which it compiles when the module loads: sm_XY on
 * X.Y and every later device, sm_XYf on the later minors of X, sm_XYa on X.Y only.
 */
static int target_runs_here(const struct sd_image *img)
{
	int major = img->mod->arch / 10, minor = img->mod->arch % 10;

	if (img->variant == 'a')
		return sd.cc_major == major && sd.cc_minor == minor;
	if (img->variant == 'f')
		return sd.cc_major == major && sd.cc_minor >= minor;
	return sd.cc_major > major || (sd.cc_major == major && sd.cc_minor >= minor);
}

/* ctx NULL: a library's module, which belongs to no context. */
static CUresult module_load(const char *text, struct sd_ctx *ctx, struct sd_module **out)
{
	struct sd_module *m = calloc(1, sizeof(*m));
	struct sd_image img = { .mod = m };
	CUresult rc = CUDA_SUCCESS;

	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->device = ctx ? ctx->device : 0;
	if (parse_image(&img, text))
		rc = CUDA_ERROR_INVALID_IMAGE;
	if (rc == CUDA_SUCCESS && !target_runs_here(&img)) {
		sd_log("module targets sm_%d%.1s, the device is %d.%d", m->arch, &img.variant,
		       sd.cc_major, sd.cc_minor);
		rc = CUDA_ERROR_NO_BINARY_FOR_GPU;
	}
	if (rc == CUDA_SUCCESS)
		rc = resolve_kernels(&img);
	if (rc == CUDA_SUCCESS)
		rc = alloc_globals(m);
	free(img.library);
	if (rc) {
		module_release(m, 0);
		return rc;
	}
	init_attrs(m);
	sd_obj_add(&m->obj, SD_MODULE, ctx);
	*out = m;
	return CUDA_SUCCESS;
}

/* cuModuleLoad and cuLibraryLoadFromFile: the same text, from a file. */
static CUresult read_image(const char *path, char **text)
{
	FILE *f;
	size_t n;

	if (!path)
		return CUDA_ERROR_INVALID_VALUE;
	f = fopen(path, "r");
	if (!f)
		return CUDA_ERROR_FILE_NOT_FOUND;
	*text = malloc(SD_IMAGE_MAX + 1);
	n = *text ? fread(*text, 1, SD_IMAGE_MAX + 1, f) : 0;
	fclose(f);
	if (!*text)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (n > SD_IMAGE_MAX || memchr(*text, '\0', n)) {
		free(*text);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	(*text)[n] = '\0';
	return CUDA_SUCCESS;
}

static CUresult module_load_data(CUmodule *module, const void *image)
{
	struct sd_module *m;
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!module || !image)
		return CUDA_ERROR_INVALID_VALUE;
	rc = module_load(image, ctx, &m);
	if (rc == CUDA_SUCCESS)
		*module = (CUmodule)m;
	return rc;
}

static CUresult module_load_file(CUmodule *module, const char *path)
{
	struct sd_ctx *ctx;
	char *text;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	rc = read_image(path, &text);
	if (rc)
		return rc;
	rc = module_load_data(module, text);
	free(text);
	return rc;
}

CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *path)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(module_load_file(module, path));
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(module_load_data(module, image));
}

/* JIT options mean nothing to text images. */
CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int n_options,
				    CUjit_option *options, void **values)
{
	CUresult rc = sd_enter(__func__);

	(void)n_options;
	(void)options;
	(void)values;
	return rc ? rc : sd_leave(module_load_data(module, image));
}

CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *image)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(module_load_data(module, image));
}

static struct sd_module *module_find(CUmodule handle)
{
	struct sd_obj *obj = sd_obj_find(SD_MODULE, handle);

	return obj ? sd_container(obj, struct sd_module, obj) : NULL;
}

/* A library's module goes with its library only. */
CUresult CUDAAPI cuModuleUnload(CUmodule handle)
{
	struct sd_module *m;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	m = module_find(handle);
	if (!m || !m->obj.ctx)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	sd_module_free(&m->obj);
	return sd_leave(CUDA_SUCCESS);
}

static struct sd_func *func_named(struct sd_module *m, const char *name)
{
	unsigned i;

	for (i = 0; i < m->n_funcs; i++)
		if (!strcmp(m->funcs[i].name, name))
			return &m->funcs[i];
	return NULL;
}

static CUresult get_function(CUfunction *func, struct sd_module *m, const char *name)
{
	struct sd_func *f;

	if (!m)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!func || !name)
		return CUDA_ERROR_INVALID_VALUE;
	f = func_named(m, name);
	if (!f)
		return CUDA_ERROR_NOT_FOUND;
	*func = (CUfunction)f;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *func, CUmodule handle, const char *name)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(get_function(func, module_find(handle), name));
}

/* @name of @m; cuLibraryGetManaged (@managed) finds only __managed__ variables. */
static CUresult find_global(CUdeviceptr *dptr, size_t *bytes, struct sd_module *m,
			    const char *name, int managed)
{
	unsigned i;

	if (!m)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < m->n_globals; i++) {
		if (strcmp(m->globals[i].name, name) || (managed && !m->globals[i].managed))
			continue;
		if (dptr)
			*dptr = m->globals[i].addr;
		if (bytes)
			*bytes = m->globals[i].size;
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_NOT_FOUND;
}

static CUresult get_global(CUdeviceptr *dptr, size_t *bytes, struct sd_module *m,
			   const char *name)
{
	return find_global(dptr, bytes, m, name, 0);
}

int sd_global_managed(uintptr_t addr)
{
	for (struct sd_obj *obj = sd.objs[SD_MODULE]; obj; obj = obj->next) {
		struct sd_module *m = sd_container(obj, struct sd_module, obj);

		for (unsigned i = 0; i < m->n_globals; i++)
			if (m->globals[i].managed && addr >= m->globals[i].addr &&
			    addr - m->globals[i].addr < m->globals[i].size)
				return 1;
	}
	return 0;
}

CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule handle,
				   const char *name)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(get_global(dptr, bytes, module_find(handle), name));
}

int sd_global_region(uintptr_t addr, struct sd_region *region)
{
	struct sd_obj *obj;
	unsigned i;

	for (obj = sd.objs[SD_MODULE]; obj; obj = obj->next) {
		struct sd_module *m = sd_container(obj, struct sd_module, obj);

		for (i = 0; i < m->n_globals; i++) {
			struct sd_global *g = &m->globals[i];

			if (addr < g->addr || addr - g->addr >= g->size)
				continue;
			memset(region, 0, sizeof(*region));
			region->base = region->range_base = g->addr;
			region->size = region->range_size = g->size;
			region->type = CU_MEMORYTYPE_DEVICE;
			region->prot = PROT_READ | PROT_WRITE;
			region->device = m->device;
			region->ctx = obj->ctx;
			region->id = g->id;
			return 1;
		}
	}
	return 0;
}

/* Functions and kernels are the elements of their module's arrays. */
struct sd_func *sd_func_find(CUfunction handle)
{
	uintptr_t p = (uintptr_t)handle;
	struct sd_obj *obj;

	for (obj = sd.objs[SD_MODULE]; obj; obj = obj->next) {
		struct sd_module *m = sd_container(obj, struct sd_module, obj);
		uintptr_t base = (uintptr_t)m->funcs;

		if (m->n_funcs && p >= base && p < base + m->n_funcs * sizeof(*m->funcs) &&
		    (p - base) % sizeof(*m->funcs) == 0)
			return (struct sd_func *)handle;
	}
	return NULL;
}

struct sd_func *sd_kernel_find(CUkernel handle)
{
	uintptr_t p = (uintptr_t)handle;
	struct sd_obj *obj;

	for (obj = sd.objs[SD_MODULE]; obj; obj = obj->next) {
		struct sd_module *m = sd_container(obj, struct sd_module, obj);
		uintptr_t base = (uintptr_t)m->kernels;

		if (m->n_funcs && p >= base && p < base + m->n_funcs * sizeof(*m->kernels) &&
		    (p - base) % sizeof(*m->kernels) == 0)
			return ((struct sd_kernel *)handle)->func;
	}
	return NULL;
}

static CUresult library_load(CUlibrary *library, const char *text)
{
	struct sd_library *lib;
	CUresult rc;

	if (!library || !text)
		return CUDA_ERROR_INVALID_VALUE;
	lib = calloc(1, sizeof(*lib));
	if (!lib)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = module_load(text, NULL, &lib->mod);
	if (rc) {
		free(lib);
		return rc;
	}
	sd_obj_add(&lib->obj, SD_LIBRARY, NULL);
	*library = (CUlibrary)lib;
	return CUDA_SUCCESS;
}

/* Libraries belong to no context; their options, like JIT options, are ignored. */
CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code,
				   CUjit_option *jit_options, void **jit_values,
				   unsigned int n_jit, CUlibraryOption *options, void **values,
				   unsigned int n_options)
{
	CUresult rc = sd_enter(__func__);

	(void)jit_options, (void)jit_values, (void)n_jit;
	(void)options, (void)values, (void)n_options;
	return rc ? rc : sd_leave(library_load(library, code));
}

CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *path,
				       CUjit_option *jit_options, void **jit_values,
				       unsigned int n_jit, CUlibraryOption *options,
				       void **values, unsigned int n_options)
{
	char *text;
	CUresult rc = sd_enter(__func__);

	(void)jit_options, (void)jit_values, (void)n_jit;
	(void)options, (void)values, (void)n_options;
	if (rc)
		return rc;
	rc = read_image(path, &text);
	if (rc)
		return sd_leave(rc);
	rc = library_load(library, text);
	free(text);
	return sd_leave(rc);
}

static struct sd_library *library_find(CUlibrary handle)
{
	struct sd_obj *obj = sd_obj_find(SD_LIBRARY, handle);

	return obj ? sd_container(obj, struct sd_library, obj) : NULL;
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary handle)
{
	struct sd_library *lib;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	lib = library_find(handle);
	if (!lib)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	sd_module_free(&lib->mod->obj);
	sd_obj_del(&lib->obj);
	free(lib);
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel *kernel, CUlibrary handle, const char *name)
{
	struct sd_library *lib;
	struct sd_func *f;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	lib = library_find(handle);
	if (!lib)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	if (!kernel || !name)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	f = func_named(lib->mod, name);
	if (!f)
		return sd_leave(CUDA_ERROR_NOT_FOUND);
	*kernel = (CUkernel)&lib->mod->kernels[f - lib->mod->funcs];
	return sd_leave(CUDA_SUCCESS);
}

/* Functions are found as the module text lists them. */
static CUresult count_funcs(unsigned *count, const struct sd_module *m)
{
	if (!m)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = m->n_funcs;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int *count, CUmodule handle)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(count_funcs(count, module_find(handle)));
}

/* As CUDA asks: room for exactly as many as the module holds. */
CUresult CUDAAPI cuModuleEnumerateFunctions(CUfunction *funcs, unsigned int n, CUmodule handle)
{
	struct sd_module *m;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(m = module_find(handle)))
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	if (!funcs || n != m->n_funcs)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	for (unsigned i = 0; i < n; i++)
		funcs[i] = (CUfunction)&m->funcs[i];
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int *count, CUlibrary handle)
{
	struct sd_library *lib;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	lib = library_find(handle);
	return sd_leave(count_funcs(count, lib ? lib->mod : NULL));
}

CUresult CUDAAPI cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int n, CUlibrary handle)
{
	struct sd_library *lib;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(lib = library_find(handle)))
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	if (!kernels || n != lib->mod->n_funcs)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	for (unsigned i = 0; i < n; i++)
		kernels[i] = (CUkernel)&lib->mod->kernels[i];
	return sd_leave(CUDA_SUCCESS);
}

/* Every module loads eagerly here, whatever CUDA_MODULE_LOADING says. */
CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!mode)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*mode = CU_MODULE_EAGER_LOADING;
	return sd_leave(CUDA_SUCCESS);
}

/* The calls that answer for the current context need one. */
static CUresult library_enter(const char *func, CUlibrary handle, struct sd_library **lib)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(func);

	if (rc)
		return rc;
	rc = sd_ctx_current(&ctx);
	*lib = library_find(handle);
	if (rc == CUDA_SUCCESS && !*lib)
		rc = CUDA_ERROR_INVALID_HANDLE;
	if (rc)
		sd_leave(rc);
	return rc;
}

CUresult CUDAAPI cuLibraryGetModule(CUmodule *module, CUlibrary handle)
{
	struct sd_library *lib;
	CUresult rc = library_enter(__func__, handle, &lib);

	if (rc)
		return rc;
	if (!module)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*module = (CUmodule)lib->mod;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary handle,
				    const char *name)
{
	struct sd_library *lib;
	CUresult rc = library_enter(__func__, handle, &lib);

	return rc ? rc : sd_leave(get_global(dptr, bytes, lib->mod, name));
}

CUresult CUDAAPI cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary handle,
				     const char *name)
{
	struct sd_library *lib;
	CUresult rc = library_enter(__func__, handle, &lib);

	return rc ? rc : sd_leave(find_global(dptr, bytes, lib->mod, name, 1));
}
