/* SPDX-License-Identifier: MIT */
/*
 * files - open files across a checkpoint: an O_APPEND log written before and
 * after, a file read partly before and continued after from the same offset,
 * a deleted file still open and read after, and a pipe with bytes in it.
 *
 * The log is cut back to its length at the checkpoint before it is written
 * again, so that restoring the same image twice gives the same log.
 */
#include <sys/stat.h>

#include "prog.h"

#define DATA_LEN 65536
#define DEAD_LEN 20000

static char buf[DATA_LEN];

static uint8_t data_byte(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 8));
}

static uint64_t sum(const char *b, size_t n)
{
	uint64_t s = 0;

	for (size_t i = 0; i < n; i++)
		s = s * 131 + (uint8_t)b[i];
	return s;
}

static int make_file(const char *dir, const char *name, size_t len, int oflags)
{
	char path[PATH_MAX];
	int fd;

	for (size_t i = 0; i < len; i++)
		buf[i] = (char)data_byte(i);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len || close(fd))
		prog_die("cannot write %s: %s", path, strerror(errno));
	fd = open(path, oflags);
	if (fd < 0)
		prog_die("cannot open %s: %s", path, strerror(errno));
	return fd;
}

static void log_line(int fd, const char *fmt, int n)
{
	char line[128];
	int len = snprintf(line, sizeof(line), fmt, n);

	if (write(fd, line, (size_t)len) != len)
		prog_die("cannot write the log: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];
	struct prog p;
	int logfd, datafd, deadfd, pfd[2];
	off_t log_len, pos;
	struct stat st;
	ssize_t n;

	prog_init(&p, argc, argv);
	snprintf(path, sizeof(path), "%s/log.txt", p.dir);
	logfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (logfd < 0)
		prog_die("cannot open %s: %s", path, strerror(errno));
	for (int i = 0; i < 10; i++)
		log_line(logfd, "before %d\n", i);
	datafd = make_file(p.dir, "data.bin", DATA_LEN, O_RDONLY);
	n = read(datafd, buf, 1000);
	printf("read %zd bytes, sum %016llx\n", n, (unsigned long long)sum(buf, (size_t)n));
	deadfd = make_file(p.dir, "dead.bin", DEAD_LEN, O_RDWR);
	snprintf(path, sizeof(path), "%s/dead.bin", p.dir);
	unlink(path);
	lseek(deadfd, 1234, SEEK_SET);
	if (pipe(pfd) || write(pfd[1], "bytes in the pipe", 17) != 17)
		prog_die("cannot make the pipe: %s", strerror(errno));
	log_len = lseek(logfd, 0, SEEK_END);

	prog_checkpoint(&p, 1);

	if (ftruncate(logfd, log_len))
		prog_die("cannot cut the log: %s", strerror(errno));
	prog_check("log still O_APPEND", fcntl(logfd, F_GETFL) & O_APPEND, "flags 0x%x",
		   fcntl(logfd, F_GETFL));
	lseek(logfd, 0, SEEK_SET); /* O_APPEND: writes go to the end anyway */
	for (int i = 0; i < 5; i++)
		log_line(logfd, "after %d\n", i);
	pos = lseek(datafd, 0, SEEK_CUR);
	prog_check("read offset kept", pos == 1000, "offset %lld", (long long)pos);
	n = read(datafd, buf, 3000);
	printf("read %zd more bytes, sum %016llx\n", n, (unsigned long long)sum(buf, (size_t)n));
	pos = lseek(deadfd, 0, SEEK_CUR);
	prog_check("deleted file offset kept", pos == 1234, "offset %lld", (long long)pos);
	prog_check("deleted file still deleted", fstat(deadfd, &st) == 0 && st.st_nlink == 0 &&
		   st.st_size == DEAD_LEN, "links %lu, size %lld", (unsigned long)st.st_nlink,
		   (long long)st.st_size);
	n = pread(deadfd, buf, DEAD_LEN, 0);
	printf("deleted file: %zd bytes, sum %016llx\n", n, (unsigned long long)sum(buf,
	       n > 0 ? (size_t)n : 0));
	prog_check("deleted file writable", pwrite(deadfd, "x", 1, 5) == 1, "%s",
		   strerror(errno));
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	n = read(pfd[0], buf, sizeof(buf));
	printf("pipe: %zd bytes '%.*s'\n", n, n > 0 ? (int)n : 0, buf);
	n = read(pfd[0], buf, sizeof(buf));
	prog_check("pipe then empty", n < 0 && errno == EAGAIN, "read %zd", n);
	prog_check("pipe still works", write(pfd[1], "more", 4) == 4 &&
		   read(pfd[0], buf, 4) == 4 && !memcmp(buf, "more", 4), "%s", strerror(errno));
	fcntl(pfd[0], F_SETFL, 0);
	log_len = lseek(logfd, 0, SEEK_END);

	prog_checkpoint(&p, 2);

	if (ftruncate(logfd, log_len))
		prog_die("cannot cut the log: %s", strerror(errno));
	log_line(logfd, "last %d\n", 0);
	close(logfd);
	snprintf(path, sizeof(path), "%s/log.txt", p.dir);
	logfd = open(path, O_RDONLY);
	n = read(logfd, buf, sizeof(buf));
	printf("log:\n%.*s", n > 0 ? (int)n : 0, buf);
	return 0;
}
