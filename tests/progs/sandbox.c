/* SPDX-License-Identifier: MIT */
/*
 * sandbox.c - run a command in the settings where users deploy, without a
 * container runtime: the tests checkpoint and restore inside it.
 *
 *   sandbox [--seccomp docker] [--refuse CALL]... [--caps docker|none]
 *           [--user UID] [--no-new-privs] -- PROGRAM [ARGS...]
 *
 * --seccomp docker  a classic-BPF filter that answers as Docker's default
 *                   profile does for a container without CAP_SYS_ADMIN:
 *                   clone3 gets ENOSYS (so that libc falls back to clone);
 *                   clone with a namespace flag, unshare, setns, kcmp,
 *                   userfaultfd, perf_event_open, bpf, the key calls, the
 *                   file-handle calls, mount and its kin, and the other calls
 *                   the profile keeps for capabilities Docker does not grant,
 *                   get EPERM; personality takes only 0, 8, 0x20000, 0x20008
 *                   and the query 0xffffffff. Everything else is allowed.
 * --refuse CALL     one refusal more, alone or with --seccomp: clone3-enosys,
 *                   clone3-eperm (older profiles: libc then starts no thread),
 *                   set-mm (prctl PR_SET_MM: a kernel without checkpoint/restore
 *                   support, or a stricter policy)
 * --caps docker     the capability set Docker gives a container by default
 *                   (bounding set; effective and permitted too while root)
 * --caps none       no capability at all
 * --user UID        switch to UID (its own group, no supplementary groups)
 * --no-new-privs    set no_new_privs, as Kubernetes "restricted" pods have it
 *
 * The filter goes in first, while the caller may still have CAP_SYS_ADMIN
 * (a filter without no_new_privs needs it), then the capabilities and the
 * ids are dropped, then PROGRAM is executed. Exit status 125 when the
 * sandbox cannot be set up; PROGRAM's otherwise.
 */
#include <errno.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXIT_SETUP 125
#define REFUSE_CLONE3_ENOSYS 0x1u
#define REFUSE_CLONE3_EPERM 0x2u
#define REFUSE_SET_MM 0x4u
#define CLONE_NS_FLAGS 0x7e020000u /* NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET */
#define MAX_INSNS 256

/* Docker's default capabilities. */
static const int docker_caps[] = {
	CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FSETID, CAP_FOWNER, CAP_MKNOD, CAP_NET_RAW,
	CAP_SETGID, CAP_SETUID, CAP_SETFCAP, CAP_SETPCAP, CAP_NET_BIND_SERVICE,
	CAP_SYS_CHROOT, CAP_KILL, CAP_AUDIT_WRITE,
};

/* Refused with EPERM: not in Docker's allow list, or kept for a capability it does not grant. */
static const long denied[] = {
	SYS_unshare, SYS_setns, SYS_kcmp, SYS_userfaultfd, SYS_perf_event_open, SYS_bpf,
	SYS_keyctl, SYS_add_key, SYS_request_key, SYS_open_by_handle_at, SYS_mount,
	SYS_umount2, SYS_pivot_root, SYS_fsopen, SYS_fsconfig, SYS_fsmount, SYS_fspick,
	SYS_open_tree, SYS_move_mount, SYS_mount_setattr, SYS_pidfd_getfd,
	SYS_process_madvise, SYS_quotactl, SYS_quotactl_fd, SYS_lookup_dcookie, SYS_syslog,
	SYS_sethostname, SYS_setdomainname, SYS_reboot, SYS_kexec_load, SYS_kexec_file_load,
	SYS_init_module, SYS_finit_module, SYS_delete_module, SYS_acct, SYS_swapon,
	SYS_swapoff, SYS_iopl, SYS_ioperm, SYS_settimeofday, SYS_clock_settime, SYS_vhangup,
	SYS_mbind, SYS_set_mempolicy, SYS_get_mempolicy, SYS_move_pages, SYS_io_uring_setup,
	SYS_io_uring_enter, SYS_io_uring_register, SYS_uselib, SYS_ustat, SYS_sysfs,
	SYS__sysctl, SYS_nfsservctl, SYS_fanotify_init, SYS_create_module,
	SYS_get_kernel_syms, SYS_query_module,
};

/* personality(): the values Docker's profile lets through. */
static const unsigned personas[] = { 0x0, 0x8, 0x20000, 0x20008, 0xffffffffu };

struct prog {
	struct sock_filter insn[MAX_INSNS];
	unsigned short n;
};

static void emit(struct prog *p, unsigned short code, unsigned char jt, unsigned char jf,
		 unsigned k)
{
	if (p->n < MAX_INSNS)
		p->insn[p->n++] = (struct sock_filter)BPF_JUMP(code, k, jt, jf);
}

#define RET_ALLOW SECCOMP_RET_ALLOW
#define RET_ERRNO(e) (SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))
#define NR_OFF offsetof(struct seccomp_data, nr)
#define ARCH_OFF offsetof(struct seccomp_data, arch)
#define ARG0_LO offsetof(struct seccomp_data, args[0]) /* little-endian: low half first */

/* if (A == k) return @ret; */
static void ret_if(struct prog *p, unsigned k, unsigned ret)
{
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, k);
	emit(p, BPF_RET | BPF_K, 0, 0, ret);
}

/* clone: EPERM when a namespace flag is asked for. A holds nr; every path of clone returns. */
static void clone_rule(struct prog *p)
{
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 4, SYS_clone);
	emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG0_LO);
	emit(p, BPF_JMP | BPF_JSET | BPF_K, 0, 1, CLONE_NS_FLAGS);
	emit(p, BPF_RET | BPF_K, 0, 0, RET_ERRNO(EPERM));
	emit(p, BPF_RET | BPF_K, 0, 0, RET_ALLOW);
}

/* personality: only the listed values. */
static void personality_rule(struct prog *p)
{
	unsigned n = sizeof(personas) / sizeof(personas[0]);

	emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, (unsigned char)(2 * n + 2), SYS_personality);
	emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG0_LO);
	for (unsigned i = 0; i < n; i++)
		ret_if(p, personas[i], RET_ALLOW);
	emit(p, BPF_RET | BPF_K, 0, 0, RET_ERRNO(EPERM));
}

/* prctl(PR_SET_MM, ...): EPERM. A holds nr; every path of prctl returns. */
static void set_mm_rule(struct prog *p)
{
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 4, SYS_prctl);
	emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG0_LO);
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, PR_SET_MM);
	emit(p, BPF_RET | BPF_K, 0, 0, RET_ERRNO(EPERM));
	emit(p, BPF_RET | BPF_K, 0, 0, RET_ALLOW);
}

static void docker_rules(struct prog *p)
{
	ret_if(p, SYS_clone3, RET_ERRNO(ENOSYS));
	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++)
		ret_if(p, (unsigned)denied[i], RET_ERRNO(EPERM));
	clone_rule(p);
	personality_rule(p);
}

static int install_filter(int docker, unsigned refuse)
{
	static struct prog p;
	struct sock_fprog fp;

	emit(&p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARCH_OFF);
	emit(&p, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, AUDIT_ARCH_X86_64);
	emit(&p, BPF_RET | BPF_K, 0, 0, RET_ERRNO(EPERM));
	emit(&p, BPF_LD | BPF_W | BPF_ABS, 0, 0, NR_OFF);
	emit(&p, BPF_JMP | BPF_JGE | BPF_K, 0, 1, 0x40000000u); /* x32 */
	emit(&p, BPF_RET | BPF_K, 0, 0, RET_ERRNO(EPERM));
	if (refuse & REFUSE_CLONE3_EPERM)
		ret_if(&p, SYS_clone3, RET_ERRNO(EPERM));
	if (refuse & REFUSE_CLONE3_ENOSYS)
		ret_if(&p, SYS_clone3, RET_ERRNO(ENOSYS));
	if (refuse & REFUSE_SET_MM)
		set_mm_rule(&p);
	if (docker)
		docker_rules(&p);
	emit(&p, BPF_RET | BPF_K, 0, 0, RET_ALLOW);
	if (p.n == MAX_INSNS) {
		fprintf(stderr, "sandbox: the filter needs more than %d instructions\n", MAX_INSNS);
		return -1;
	}
	fp = (struct sock_fprog){ .len = p.n, .filter = p.insn };
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) < 0) {
		perror("sandbox: seccomp");
		return -1;
	}
	return 0;
}

static unsigned long long cap_mask(const char *set)
{
	unsigned long long m = 0;

	if (!strcmp(set, "docker"))
		for (size_t i = 0; i < sizeof(docker_caps) / sizeof(docker_caps[0]); i++)
			m |= 1ull << docker_caps[i];
	return m;
}

static int drop_bounding(unsigned long long keep)
{
	for (int cap = 0; cap <= 63; cap++) {
		if (keep & (1ull << cap))
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) {
			fprintf(stderr, "sandbox: cannot drop capability %d: %s\n", cap,
				strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Effective, permitted and inheritable become @m; ambient ones go. */
static int set_caps(unsigned long long m)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {
		{ (unsigned)m, (unsigned)m, (unsigned)m },
		{ (unsigned)(m >> 32), (unsigned)(m >> 32), (unsigned)(m >> 32) },
	};

	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (syscall(SYS_capset, &h, d) < 0) {
		perror("sandbox: capset");
		return -1;
	}
	return 0;
}

static int switch_user(uid_t uid)
{
	if (setgroups(0, NULL) < 0 || setgid((gid_t)uid) < 0 || setuid(uid) < 0) {
		fprintf(stderr, "sandbox: cannot become uid %u: %s\n", (unsigned)uid,
			strerror(errno));
		return -1;
	}
	return 0;
}

struct opts {
	const char *seccomp, *caps;
	long uid;
	int no_new_privs;
	unsigned refuse;
};

static int add_refusal(struct opts *o, const char *call)
{
	if (!strcmp(call, "clone3-enosys"))
		o->refuse |= REFUSE_CLONE3_ENOSYS;
	else if (!strcmp(call, "clone3-eperm"))
		o->refuse |= REFUSE_CLONE3_EPERM;
	else if (!strcmp(call, "set-mm"))
		o->refuse |= REFUSE_SET_MM;
	else
		return -1;
	return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--no-new-privs"))
			o->no_new_privs = 1;
		else if (i + 1 < argc && !strcmp(argv[i], "--seccomp"))
			o->seccomp = argv[++i];
		else if (i + 1 < argc && !strcmp(argv[i], "--caps"))
			o->caps = argv[++i];
		else if (i + 1 < argc && !strcmp(argv[i], "--user"))
			o->uid = strtol(argv[++i], NULL, 10);
		else if (i + 1 >= argc || strcmp(argv[i], "--refuse") || add_refusal(o, argv[++i]))
			return -1;
	}
	if (i + 1 >= argc || (o->seccomp && strcmp(o->seccomp, "docker")) ||
	    (o->caps && strcmp(o->caps, "docker") && strcmp(o->caps, "none")))
		return -1;
	return i + 1;
}

int main(int argc, char **argv)
{
	struct opts o = { .uid = -1 };
	int cmd = parse(argc, argv, &o);

	if (cmd < 0) {
		fprintf(stderr, "usage: sandbox [--seccomp docker] [--refuse CALL]... "
				"[--caps docker|none] [--user UID] [--no-new-privs] -- PROGRAM "
				"[ARGS...]\n");
		return EXIT_SETUP;
	}
	if (o.no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		perror("sandbox: no_new_privs");
		return EXIT_SETUP;
	}
	if ((o.seccomp || o.refuse) && install_filter(!!o.seccomp, o.refuse) < 0)
		return EXIT_SETUP;
	if (o.caps && drop_bounding(cap_mask(o.caps)) < 0)
		return EXIT_SETUP;
	if (o.uid >= 0 && switch_user((uid_t)o.uid) < 0)
		return EXIT_SETUP;
	if ((o.caps || o.uid >= 0) && set_caps(o.uid > 0 || !o.caps ? 0 : cap_mask(o.caps)) < 0)
		return EXIT_SETUP;
	execvp(argv[cmd], argv + cmd);
	fprintf(stderr, "sandbox: cannot run '%s': %s\n", argv[cmd], strerror(errno));
	return 127;
}
