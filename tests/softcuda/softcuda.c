/* SPDX-License-Identifier: MIT */
/*
 * softcuda.c - the software CUDA device: initialisation, configuration, the
 * device lock, the object lists, fault injection and cuGetProcAddress().
 *
 * Configuration comes from the environment, read once by the first cuInit():
 *   SOFTCUDA_DEVICES       number of devices (default 1; 0: CUDA_ERROR_NO_DEVICE)
 *   SOFTCUDA_MEMORY        device memory in MiB (default 4096)
 *   SOFTCUDA_CC            compute capability "major.minor" (default 9.0)
 *   SOFTCUDA_GLOBAL_BASE   hex address of the module global region
 *   SOFTCUDA_GLOBAL_SHIFT  bytes added to every module global address
 *   SOFTCUDA_FAIL          "cuFoo:N[,cuBar:M]": the Nth call of cuFoo fails
 *   SOFTCUDA_CRASH         "cuFoo:N[,...]": the Nth call of cuFoo aborts the process
 *   SOFTCUDA_VERBOSE       1: say on stderr why a call was refused
 *   CUDA_VISIBLE_DEVICES   as the driver reads it: which of the devices the
 *                          process sees, in which order ("1,0"), up to the
 *                          first entry that names none; a device keeps its UUID
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "softcuda_internal.h"

struct sd_state sd;

/* Recursive: kernels run under the lock and read textures through it. */
static pthread_mutex_t sd_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

void sd_lock(void)
{
	pthread_mutex_lock(&sd_mutex);
}

void sd_unlock(void)
{
	pthread_mutex_unlock(&sd_mutex);
}

void sd_log(const char *fmt, ...)
{
	va_list ap;

	if (!sd.verbose)
		return;
	va_start(ap, fmt);
	fputs("softcuda: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void sd_obj_add(struct sd_obj *obj, enum sd_kind kind, struct sd_ctx *ctx)
{
	obj->kind = kind;
	obj->ctx = ctx;
	obj->next = sd.objs[kind];
	sd.objs[kind] = obj;
}

void sd_obj_del(struct sd_obj *obj)
{
	struct sd_obj **pp;

	for (pp = &sd.objs[obj->kind]; *pp; pp = &(*pp)->next) {
		if (*pp == obj) {
			*pp = obj->next;
			obj->next = NULL;
			return;
		}
	}
}

/* Handles are the addresses of their objects: valid when listed. */
struct sd_obj *sd_obj_find(enum sd_kind kind, const void *handle)
{
	struct sd_obj *obj;

	if (!handle)
		return NULL;
	for (obj = sd.objs[kind]; obj; obj = obj->next)
		if (obj == handle)
			return obj;
	return NULL;
}

CUresult sd_device_check(CUdevice dev)
{
	return dev >= 0 && dev < sd.n_devices ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult sd_mem_charge(int device, size_t bytes)
{
	struct sd_device *d = &sd.devices[device];

	if (bytes > sd.total_mem - d->used) {
		sd_log("out of memory on device %d: %zu bytes asked, %zu free", device, bytes,
		       sd.total_mem - d->used);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	d->used += bytes;
	return CUDA_SUCCESS;
}

void sd_mem_uncharge(int device, size_t bytes)
{
	sd.devices[device].used -= bytes;
}

/* "cuMemCreate" matches cuMemCreate and also cuMemAlloc matches cuMemAlloc_v2. */
static int rule_matches(const struct sd_rule *rule, const char *func)
{
	size_t n = strlen(rule->name);

	if (strncmp(rule->name, func, n))
		return 0;
	if (!func[n])
		return 1;
	return func[n] == '_' && func[n + 1] == 'v' && func[n + 2] >= '0' && func[n + 2] <= '9';
}

static CUresult rule_error(const char *func)
{
	return strncmp(func, "cuMemCreate", 11) ? CUDA_ERROR_UNKNOWN : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult rules_apply(const char *func)
{
	unsigned i;

	for (i = 0; i < sd.n_rules; i++) {
		struct sd_rule *rule = &sd.rules[i];

		if (!rule_matches(rule, func) || ++rule->calls != rule->nth)
			continue;
		if (rule->crash) {
			fprintf(stderr, "softcuda: %s call %lu: crashing as SOFTCUDA_CRASH asks\n",
				func, rule->nth);
			abort();
		}
		sd_log("%s call %lu: failing as SOFTCUDA_FAIL asks", func, rule->nth);
		return rule_error(func);
	}
	return CUDA_SUCCESS;
}

/*
 * Every call but the few that work before cuInit() starts here: on success
 * the device lock is held until sd_leave().
 */
CUresult sd_enter(const char *func)
{
	CUresult rc;

	if (sd_procckpt_enter)
		sd_procckpt_enter(func);
	sd_lock();
	if (!sd.initialised) {
		sd_unlock();
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	rc = rules_apply(func);
	if (rc != CUDA_SUCCESS)
		sd_unlock();
	return rc;
}

CUresult sd_leave(CUresult rc)
{
	sd_unlock();
	return rc;
}

static int parse_ulong(const char *s, int base, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, base);
	return errno || end == s || *end || *s == '-' ? -1 : 0;
}

static int parse_rule(char *item, int crash)
{
	struct sd_rule *rule;
	char *colon = strrchr(item, ':');
	unsigned long nth;

	if (!colon || colon == item || (size_t)(colon - item) >= sizeof(rule->name) ||
	    parse_ulong(colon + 1, 10, &nth) || !nth || sd.n_rules == SD_MAX_RULES)
		return -1;
	rule = &sd.rules[sd.n_rules++];
	memcpy(rule->name, item, colon - item);
	rule->name[colon - item] = '\0';
	rule->nth = nth;
	rule->calls = 0;
	rule->crash = crash;
	return 0;
}

static int parse_rules(const char *var, int crash)
{
	const char *value = getenv(var);
	char buf[512], *item, *save;

	if (!value || !*value)
		return 0;
	if (strlen(value) >= sizeof(buf))
		return -1;
	strcpy(buf, value);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save))
		if (parse_rule(item, crash))
			return -1;
	return 0;
}

static int env_ulong(const char *var, int base, unsigned long dflt, unsigned long *out)
{
	const char *value = getenv(var);

	*out = dflt;
	return value && *value ? parse_ulong(value, base, out) : 0;
}

static int parse_cc(void)
{
	const char *value = getenv("SOFTCUDA_CC");
	int major, minor, len = 0;

	sd.cc_major = 9;
	sd.cc_minor = 0;
	if (!value || !*value)
		return 0;
	if (sscanf(value, "%d.%d%n", &major, &minor, &len) != 2 || value[len] || major < 1 ||
	    major > 99 || minor < 0 || minor > 9)
		return -1;
	sd.cc_major = major;
	sd.cc_minor = minor;
	return 0;
}

static CUresult bad_config(const char *var)
{
	fprintf(stderr, "softcuda: cannot use %s='%s'\n", var, getenv(var));
	sd.n_rules = 0;
	return CUDA_ERROR_INVALID_VALUE;
}

/*
 * CUDA_VISIBLE_DEVICES: ordinals of the @devices, comma-separated; unset or
 * empty: all. As the driver reads it, the list ends at the first entry that
 * names no device ("-1": none).
 */
static int parse_visible(unsigned long devices)
{
	const char *v = getenv("CUDA_VISIBLE_DEVICES");
	char *end;
	int n = 0;

	if (!v || !*v) {
		for (unsigned long i = 0; i < devices; i++)
			sd.visible[n++] = (int)i;
		return n;
	}
	for (const char *p = v; *p && n < SD_MAX_DEVICES; p = *end ? end + 1 : end) {
		unsigned long d;

		if (*p < '0' || *p > '9')
			break;
		d = strtoul(p, &end, 10);
		if (d >= devices || (*end && *end != ','))
			break;
		sd.visible[n++] = (int)d;
	}
	return n;
}

static CUresult configure(void)
{
	int visible;

	unsigned long devices, mib, base, shift, init_ms;

	sd.n_rules = 0;
	sd.verbose = getenv("SOFTCUDA_VERBOSE") && atoi(getenv("SOFTCUDA_VERBOSE")) > 0;
	if (env_ulong("SOFTCUDA_DEVICES", 10, 1, &devices) || devices > SD_MAX_DEVICES)
		return bad_config("SOFTCUDA_DEVICES");
	if (env_ulong("SOFTCUDA_MEMORY", 10, 4096, &mib) || !mib || mib > (1UL << 24))
		return bad_config("SOFTCUDA_MEMORY");
	if (parse_cc())
		return bad_config("SOFTCUDA_CC");
	if (env_ulong("SOFTCUDA_GLOBAL_BASE", 16, SD_GLOBAL_BASE, &base) || !base ||
	    base % 4096)
		return bad_config("SOFTCUDA_GLOBAL_BASE");
	if (env_ulong("SOFTCUDA_GLOBAL_SHIFT", 10, 0, &shift) || shift >= SD_GLOBAL_REGION / 2)
		return bad_config("SOFTCUDA_GLOBAL_SHIFT");
	if (env_ulong("SOFTCUDA_INIT_MS", 10, 0, &init_ms) || init_ms > 60000)
		return bad_config("SOFTCUDA_INIT_MS");
	/* a real driver's first cuInit takes a while: a checkpoint may come meanwhile */
	if (init_ms)
		nanosleep(&(struct timespec){ (time_t)(init_ms / 1000),
					      (long)(init_ms % 1000) * 1000000L }, NULL);
	if (parse_rules("SOFTCUDA_FAIL", 0))
		return bad_config("SOFTCUDA_FAIL");
	if (parse_rules("SOFTCUDA_CRASH", 1))
		return bad_config("SOFTCUDA_CRASH");
	visible = devices ? parse_visible(devices) : 0;
	if (!visible)
		return CUDA_ERROR_NO_DEVICE;
	sd.n_devices = visible;
	sd.total_mem = mib << 20;
	sd.global_base = base;
	sd.global_shift = shift;
	sd.next_tex = sd.next_surf = sd.next_buffer_id = 1;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuInit(unsigned int flags)
{
	CUresult rc = CUDA_SUCCESS;

	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	sd_lock();
	if (!sd.initialised) {
		rc = configure();
		sd.initialised = rc == CUDA_SUCCESS;
	}
	if (rc == CUDA_SUCCESS)
		rc = rules_apply(__func__);
	sd_unlock();
	return rc;
}

CUresult CUDAAPI cuDriverGetVersion(int *version)
{
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	*version = SD_DRIVER_VERSION;
	return CUDA_SUCCESS;
}

/*
 * cuGetProcAddress: versions whose prototype differs from the one before
 * exist only for callers built against the CUDA that introduced them.
 */
static const struct {
	const char *symbol;
	int since;
} proc_since[] = {
	{ "cuCtxCreate_v4", 12050 },
	{ "cuEventElapsedTime_v2", 12080 },
	{ "cuGetProcAddress_v2", 12050 },
	{ "cuDeviceGetUuid_v2", 11040 },
	{ "cuStreamBeginCapture_v2", 10010 },
	{ "cuGraphAddKernelNode_v2", 12000 },
	{ "cuGraphKernelNodeGetParams_v2", 12000 },
	{ "cuGraphKernelNodeSetParams_v2", 12000 },
	{ "cuGraphExecKernelNodeSetParams_v2", 12000 },
	{ "cuGraphExecUpdate_v2", 12000 },
	{ "cuGraphGetEdges_v2", 12030 },
	{ "cuGraphAddDependencies_v2", 12030 },
	{ "cuStreamGetCaptureInfo_v3", 12030 },
};

static int proc_version_ok(const char *symbol, int cuda_version)
{
	size_t i;

	for (i = 0; i < sizeof(proc_since) / sizeof(proc_since[0]); i++)
		if (!strcmp(proc_since[i].symbol, symbol))
			return cuda_version >= proc_since[i].since;
	return 1;
}

/* dlsym() on this library alone: its handle, and a check of where a symbol lives. */
static void *proc_lookup(const char *symbol)
{
	static void *self;
	Dl_info me, it;
	void *fn;

	if (!dladdr((void *)cuInit, &me))
		return NULL;
	if (!self)
		self = dlopen(me.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	fn = self ? dlsym(self, symbol) : NULL;
	if (!fn || !dladdr(fn, &it) || it.dli_fbase != me.dli_fbase)
		return NULL;
	return fn;
}

/* The newest version of symbol first, NAME_v9 down to NAME. */
static CUresult proc_find(const char *symbol, int cuda_version, void **pfn,
			  CUdriverProcAddressQueryResult *status)
{
	char name[160];
	int v, too_new = 0;

	for (v = 9; v >= 1; v--) {
		if (v > 1)
			snprintf(name, sizeof(name), "%s_v%d", symbol, v);
		else
			snprintf(name, sizeof(name), "%s", symbol);
		*pfn = proc_lookup(name);
		if (*pfn && proc_version_ok(name, cuda_version)) {
			*status = CU_GET_PROC_ADDRESS_SUCCESS;
			return CUDA_SUCCESS;
		}
		too_new |= *pfn != NULL;
	}
	*pfn = NULL;
	*status = too_new ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT :
			    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cuda_version,
				  cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
	CUdriverProcAddressQueryResult ignored;

	if (!symbol || !pfn || strlen(symbol) > 128 ||
	    (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
				   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
		return CUDA_ERROR_INVALID_VALUE;
	/* Every stream runs synchronously: the per-thread forms are the plain ones. */
	return proc_find(symbol, cuda_version, pfn, status ? status : &ignored);
}
