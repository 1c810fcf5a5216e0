#!/bin/sh
# Process trees under selfckpt-run: checkpoint the job by a signal at a random
# moment, kill -9 every process of it, restore the set twice; each restored
# run must end with exactly the output of an uninterrupted run.
#   trees.sh BUILD pipeline|zombie|daemon|make|grandchild|shared|pool|prefork|queued|sysv|
#                  sigchld|files|exit|leaveout
# and the refusals: a process that escapes the job refuses its checkpoint, so
# does a connection its server leaves unaccepted, and a set missing an image
# or with a changed manifest refuses its restore:
#   trees.sh BUILD escape|unaccepted|eventfd|missing|topexits
# and a job of a shell with job control, restored on a terminal:
#   trees.sh BUILD terminal
# and selfckpt_save() in a job's top process or in its child (the set at its path,
# restored twice):
#   trees.sh BUILD save|savechild
set -u
build=$(cd "$1" && pwd) what=$2
dir=$(mktemp -d /tmp/sc-tree-XXXXXX)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
mkdir images tmp
# the job's temporary files (sort's) are among its files, which round 2 gets back
TMPDIR=$dir/tmp
export TMPDIR
sig=USR2 # at once; USR1 waits for a safe point, the same without CUDA
result=out.txt # what the job writes; compared with the reference run's
wait_s=1
# TREES_SECCOMP=docker: the job runs under Docker's default seccomp profile (no kcmp()); it is
# restored outside it (a tree's restore needs a pid namespace, which the profile refuses)
run_in=
[ "${TREES_SECCOMP:-}" = docker ] && run_in="$build/tests/progs/sandbox --seccomp docker --no-new-privs --"

# python3 may be a launcher that runs programs of its own before it executes the interpreter
# (pyenv's shim, a shell script): the jobs are the interpreter's, whose children the random
# moment counts from
python=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) && [ -x "$python" ] ||
	python=python3

# A random moment from 0.5 to 1.5 s in.
moment() {
	awk -v seed="$$$(date +%N)" 'BEGIN { srand(seed); printf "%.2f\n", 0.5 + rand() }'
}

# Run the job ("$@" after two words) under selfckpt-run and signal it once it has made the
# file "ready" (the state the refusal is about holds from then on; a loaded machine may take
# seconds to start it): the checkpoint is refused with a message that matches $2, no file is
# left, and the job goes on to print the line $1 (nothing is asked of its output where $1 is
# empty).
refused_run() {
	printed=$1 pattern=$2
	shift 2
	$run_in "$build/bin/selfckpt-run" --dir images -- "$@" < /dev/null > run.out 2> run.err &
	run=$!
	i=0
	while [ ! -e ready ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
	[ -e ready ] || { echo "the job did not get ready in 20 s" >&2; cat run.err >&2; exit 1; }
	kill -"$sig" "$run"
	wait "$run"
	status=$?
	[ $status -eq 0 ] && { [ -z "$printed" ] || grep -qx "$printed" run.out; } || {
		echo "the job exited $status, printed '$(cat run.out)'" >&2
		cat run.err >&2
		exit 1
	}
	grep -q "$pattern" run.err || {
		echo "the refusal does not say '$pattern':" >&2
		cat run.err >&2
		exit 1
	}
	[ ! -e images/latest ] && [ -z "$(ls images)" ] ||
		{ echo "files left in images:" >&2; ls -a images >&2; exit 1; }
	exit 0
}

# A Python job's first lines: a listening unix socket, and a child that connects and sends.
server_and_client() {
	cat <<'EOF'
import os, socket, time
path = os.path.abspath("serve.sock")
if os.path.exists(path):
    os.unlink(path)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(4)
pid = os.fork()
if pid == 0:
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(path)
    c.sendall(b"12345")
    open("ready", "w").close()
EOF
}

case $what in
pipeline | exit)
	# data in the pipes and in sort's memory at the instant; the pause makes the job
	# last longer than the moment of the signal, however fast the machine. "exit": run
	# with --exit-after-save, the whole job ends with status 75 once its set is written
	cat > job.sh <<'EOF'
{ seq 1 100000; sleep 2; seq 100001 200000; } | while read x; do echo $((x * 7919 % 100003)); done |
	sort -n | sha256sum > out.txt
EOF
	set -- sh job.sh
	;;
zombie)
	# the child ends at once; its parent waits for it only after a while
	cat > job.py <<'EOF'
import os, time
pid = os.fork()
if pid == 0:
    os._exit(7)
with open("out.txt", "w") as out:
    for i in range(30):
        out.write(f"step {i}\n"); out.flush()
        time.sleep(0.1)
    got, status = os.waitpid(pid, 0)
    out.write(f"child {got == pid} exited {os.WEXITSTATUS(status)}\n")
EOF
	set -- "$python" job.py
	;;
daemon)
	# double fork, setsid: the daemon is the top of its job once its parents are gone
	cat > job.py <<'EOF'
import os, sys, time
if os.fork():
    sys.exit(0)
os.setsid()
if os.fork():
    os._exit(0)
with open("daemon.pid", "w") as f:
    f.write(str(os.getpid()))
with open("out.txt", "w") as out:
    for i in range(40):
        out.write(f"tick {i} pid {os.getpid() == int(open('daemon.pid').read())}\n")
        out.flush()
        time.sleep(0.05)
    out.write("done\n")
EOF
	set -- "$python" job.py
	wait_s=0.3
	;;
shared)
	# a parent and a child that work through anonymous shared memory, turn by turn
	cat > job.py <<'EOF'
import mmap, os, struct, time
mem = mmap.mmap(-1, 1 << 20)  # MAP_SHARED | MAP_ANONYMOUS, inherited by the child
to_child, from_parent = os.pipe()
to_parent, from_child = os.pipe()
pid = os.fork()
if pid == 0:
    for i in range(400):
        os.read(to_child, 1)
        n, = struct.unpack_from("q", mem, 0)
        total, = struct.unpack_from("q", mem, 8)
        struct.pack_into("q", mem, 8, total + n * n)
        mem[4096 * (1 + i % 200)] = (n * 7) % 251
        os.write(from_child, b"k")
    os._exit(0)
check = 0
for i in range(400):
    struct.pack_into("q", mem, 0, i)
    os.write(from_parent, b"g")
    os.read(to_parent, 1)
    check = (check * 31 + mem[4096 * (1 + i % 200)]) % 1000000007
    time.sleep(0.005)
os.waitpid(pid, 0)
with open("out.txt", "w") as out:
    out.write("total %d check %d\n" % (struct.unpack_from("q", mem, 8)[0], check))
EOF
	set -- "$python" job.py
	;;
pool)
	# Python's multiprocessing: a pool of two forked workers, its pipes and its locks
	# (POSIX semaphores: shared memory of a removed file)
	cat > job.py <<'EOF'
import hashlib, multiprocessing as mp, time
def work(i):
    time.sleep(0.02)
    return hashlib.sha256(str(i).encode()).hexdigest()[:8]
if __name__ == "__main__":
    mp.set_start_method("fork")
    with mp.Pool(2) as pool:
        res = pool.map(work, range(200), chunksize=1)
    with open("out.txt", "w") as out:
        out.write(hashlib.sha256("".join(res).encode()).hexdigest() + "\n")
EOF
	set -- "$python" job.py
	;;
prefork)
	# a pre-forked pool of 4 workers serving a unix socket, and their client. 800 requests
	# of 4 ms at least: the pool outlives the latest signal by 1.7 s, a loaded machine's delay
	cat > job.py <<'EOF'
import os, socket, time
path = os.path.abspath("serve.sock")
if os.path.exists(path):
    os.unlink(path)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(16)
workers = []
for w in range(4):
    pid = os.fork()
    if pid == 0:
        while True:
            conn, _ = srv.accept()
            n = int(conn.recv(64))
            if n < 0:
                conn.close()
                os._exit(0)
            time.sleep(0.004)
            conn.sendall(b"%d" % (n * n % 1000003 + w * 0))
            conn.close()
    workers.append(pid)
total = 0
for i in range(800):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(path)
    c.sendall(b"%d" % i)
    total = (total * 31 + int(c.recv(64))) % 1000000007
    c.close()
for w in workers:
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(path)
    c.sendall(b"-1")
    c.close()
for w in workers:
    os.waitpid(w, 0)
with open("out.txt", "w") as out:
    out.write("total %d\n" % total)
EOF
	set -- "$python" job.py
	;;
sysv)
	# a parent and child sharing a System V semaphore, segment and queue, and anonymous memory
	set -- "$build/tests/progs/tree_sysv"
	;;
files)
	# one file opened twice at one position, once of it inherited by the child: the child's
	# seek moves the inherited one only (one open file description each, as the kernel had
	# them); and a removed file opened twice, one for the parent, one for the child, which
	# writes to it after the checkpoint: the parent reads it (one file, two descriptions).
	# The child lives 4 s, the signal comes 0.5-1.5 s after it exists: a loaded machine
	# that is late to signal still finds a job of two processes
	cat > job.py <<'EOF'
import os, time
a = os.open("data.txt", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
b = os.open("data.txt", os.O_RDWR)
os.write(a, b"x" * 100)
os.lseek(a, 0, os.SEEK_SET)
mine = os.open("gone.txt", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
yours = os.open("gone.txt", os.O_RDWR)
os.unlink("gone.txt")
pid = os.fork()
if pid == 0:
    os.close(mine)
    time.sleep(4)
    os.lseek(a, 1000, os.SEEK_SET)
    os.write(yours, b"written by the child")
    os._exit(0)
os.close(yours)
os.waitpid(pid, 0)
with open("out.txt", "w") as out:
    out.write("a %d b %d removed file '%s' at %d\n" % (
        os.lseek(a, 0, os.SEEK_CUR), os.lseek(b, 0, os.SEEK_CUR),
        os.pread(mine, 100, 0).decode(), os.lseek(mine, 0, os.SEEK_CUR)))
EOF
	set -- "$python" job.py
	;;
leaveout)
	# with --leave-out-escaped, a static child the library cannot enter is left out of
	# the set, named, and the rest of the job comes back without it
	cat > job.sh <<EOF
"$build/tests/progs/static_sleep" 5 &
{ seq 1 100000; sleep 2; seq 100001 200000; } | while read x; do echo \$((x * 7919 % 100003)); done |
	sort -n | sha256sum > out.txt
EOF
	set -- sh job.sh
	;;
sigchld)
	# a SIGCHLD blocked and pending across the checkpoint, from a zombie child
	set -- "$build/tests/progs/sigchld_pending"
	;;
queued)
	# the signal comes while the child's request waits in the queue of its parent's
	# socket: the checkpoint waits until the parent accepts it, at 2 s. The child waits
	# for its answer until 4.5 s: a loaded machine late to signal still finds it there
	{ server_and_client; cat <<'EOF'; } > job.py
    answer = c.recv(64)
    with open("out.txt", "w") as out:
        out.write("answer %s\n" % answer.decode())
    os._exit(0)
time.sleep(2)
conn, _ = srv.accept()
n = int(conn.recv(64))
time.sleep(2.5)
conn.sendall(b"%d" % (n * 7))
os.waitpid(pid, 0)
EOF
	set -- "$python" job.py
	;;
unaccepted)
	# a connection its server does not accept for 4 s: the checkpoint is refused, named
	{ server_and_client; cat <<'EOF'; } > job.py
    print(c.recv(64).decode())
    os._exit(0)
time.sleep(4)
conn, _ = srv.accept()
conn.sendall(conn.recv(64))
os.waitpid(pid, 0)
EOF
	refused_run 12345 "did not accept 1 connection queued at its unix socket" "$python" job.py
	;;
grandchild)
	# three generations, each with a pipe to its parent
	cat > job.sh <<'EOF'
sh -c 'sh -c "{ seq 1 200000; sleep 2; seq 200001 400000; } | while read x; do echo \$x; done" | while read y; do echo $((y * 3)); done' | sha256sum > out.txt
EOF
	set -- sh job.sh
	;;
make)
	mkdir proj
	for i in 1 2 3 4 5 6; do seq $((i * 1000)) $((i * 1000 + 80000)) > proj/in$i.txt; done
	cat > proj/Makefile <<'EOF'
OUTS := $(patsubst %.txt,%.out,$(wildcard in*.txt))
all.sum: $(OUTS)
	cat $^ | sha256sum > $@
%.out: %.txt
	sleep 0.6; while read x; do echo $$((x * x % 977)); done < $< | sort -n > $@
EOF
	cp -r proj proj.clean
	set -- make -s -C proj -j2
	result=proj/all.sum
	;;
escape)
	# a static program the library cannot enter: named, and no set is written
	refused_run "" "process [0-9]* ('.*static_sleep'), a child of [0-9]*, runs without the selfckpt library" \
		sh -c "$build/tests/progs/static_sleep 6 &
			until grep -q static_sleep /proc/\$!/comm; do sleep 0.05; done; : > ready; wait"
	;;
save | savechild)
	# selfckpt_save() in the top of a job (save) or in its child (savechild) writes the
	# job's set at its path, and returns "restored" in the restored process
	cat > job.py <<'EOF'
import ctypes, os, sys, time
save = getattr(ctypes.CDLL(None), "selfckpt_save", None)
in_child = sys.argv[1] == "savechild"

def saved_here():
    ret = save(b"saved.tree")
    print("restored" if ret == 2 else "saved" if ret == 1 else "failed %d" % ret,
          file=sys.stderr, flush=True)

r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    for i in range(300):
        os.write(w, b"%d\n" % i)
        if i == 100 and save and in_child:
            saved_here()
        time.sleep(0.002)
    os._exit(0)
os.close(w)
total = 0
for n, line in enumerate(os.fdopen(r)):
    total += int(line) * (n + 1)
    if n == 100 and save and not in_child:
        saved_here()
os.waitpid(pid, 0)
with open("out.txt", "w") as out:
    out.write("total %d\n" % total)
EOF
	set -- "$python" job.py "$what"
	"$@" < /dev/null > /dev/null 2>&1 && mv out.txt reference.txt ||
		{ echo "reference run failed" >&2; exit 1; }
	"$build/bin/selfckpt-run" --dir images -- "$@" < /dev/null > /dev/null 2> run.err
	grep -qx saved run.err && cmp -s out.txt reference.txt &&
		[ -f saved.tree/manifest ] || {
		echo "the run that saved: $(cat out.txt 2>/dev/null)" >&2
		cat run.err >&2
		exit 1
	}
	for round in 1 2; do
		rm -f out.txt
		"$build/bin/selfckpt-restore" saved.tree < /dev/null > /dev/null 2> restore.err
		status=$?
		[ $status -eq 0 ] && grep -qx restored restore.err && cmp -s out.txt reference.txt || {
			echo "restore $round of saved.tree: exit $status, $(cat out.txt 2>/dev/null)" >&2
			cat restore.err >&2
			exit 1
		}
	done
	exit 0
	;;
topexits)
	# the top exits while its job's checkpoint waits for a child that never runs the library
	# (started with the environment cleared): the exit waits for the checkpoint, which is
	# refused naming that child, and nothing is left in the folder, not even a set half made
	# (a shell would wait for its own sleep, which the checkpoint stops: Python sleeps itself).
	# Popen returns once the child runs sleep: never while it still runs the library (as
	# "env -i" did until it ran sleep, a window a loaded machine made long).
	"$build/bin/selfckpt-run" --dir images -- "$python" -c 'import os, subprocess, time
subprocess.Popen(["/bin/sleep", "4"], env={})
open("ready", "w").close()
time.sleep(1.5)
os._exit(0)' < /dev/null > /dev/null 2> run.err &
	run=$!
	i=0
	while [ ! -e ready ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	kill -"$sig" "$run"
	wait "$run"
	status=$?
	[ $status -eq 0 ] && grep -q "runs without the selfckpt library" run.err &&
		[ -z "$(ls -A images 2>/dev/null)" ] || {
		echo "the top that exited during its checkpoint: exit $status" >&2
		cat run.err >&2
		ls -la images >&2
		exit 1
	}
	exit 0
	;;
eventfd)
	# a parent and child counting through one eventfd: it cannot come back shared, so the
	# checkpoint is refused, naming it, and the job goes on
	cat > job.py <<'EOF'
import os, time
efd = os.eventfd(0)
pid = os.fork()
if pid == 0:
    open("ready", "w").close()
    for i in range(30):
        os.eventfd_write(efd, 1)
        time.sleep(0.1)
    os._exit(0)
total = 0
while total < 30:
    total += os.eventfd_read(efd)
os.waitpid(pid, 0)
print(total)
EOF
	refused_run 30 "are one anon_inode:\\[eventfd\\] object" "$python" job.py
	;;
terminal)
	# a job that reads its terminal, run from a shell with job control (its own process
	# group, in the foreground) and checkpointed as it sleeps; restored from such a shell,
	# it gets the terminal back and reads what is typed there (not stopped by SIGTTIN)
	python3 -c 'import os; os.openpty()' 2> /dev/null ||
		{ echo "no pseudo-terminal can be opened here" >&2; exit 77; }
	printf 'sleep 2\nread line\necho "read $line" > out.txt\n' > tty-job.sh
	cat > drive.py <<'EOF'
import os, pty, select, signal, sys, time
build = sys.argv[1]

def shell(cmd):  # bash with job control on a terminal of its own; cmd is not exec'd
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp("bash", ["bash", "-c", "set -m; %s; true" % cmd])
    return pid, fd

def read_for(fd, seconds):
    until, out = time.time() + seconds, b""
    while time.time() < until:
        if select.select([fd], [], [], 0.1)[0]:
            try:
                data = os.read(fd, 4096)
            except OSError:
                break
            if not data:
                break
            out += data
    return out

pid, fd = shell("%s/bin/selfckpt-run --dir images -- sh ./tty-job.sh" % build)
time.sleep(1)
top = int(os.popen("pgrep -f '^sh ./tty-job.sh$'").read().split()[0])
os.kill(top, signal.SIGUSR2)
for i in range(200):
    if os.path.exists("images/latest"):
        break
    time.sleep(0.05)
os.kill(top, signal.SIGKILL)
read_for(fd, 0.5)
os.waitpid(pid, 0)
pid, fd = shell("%s/bin/selfckpt-restore images/latest" % build)
time.sleep(2)
os.write(fd, b"hello\n")
read_for(fd, 3)
os.kill(pid, signal.SIGKILL)
EOF
	timeout 60 python3 drive.py "$build" > drive.out 2>&1
	grep -qx "read hello" out.txt 2>/dev/null || {
		echo "the restored job did not read its terminal: $(cat out.txt 2>/dev/null)" >&2
		cat drive.out >&2
		pkill -KILL -f '^sh ./tty-job.sh$'
		exit 1
	}
	exit 0
	;;
missing)
	"$build/bin/selfckpt-run" --dir images -- sh -c 'sleep 3 | cat' < /dev/null \
		> /dev/null 2> run.err &
	run=$!
	sleep 1
	kill -"$sig" "$run"
	i=0
	while [ ! -e images/latest ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	wait "$run"
	cp -r "images/$(readlink images/latest)" set
	cp -r set damaged
	victim=$(awk '$1 == "process" && $2 != "'"$run"'" { print $NF; exit }' set/manifest)
	rm "set/$victim"
	"$build/bin/selfckpt-restore" set < /dev/null > /dev/null 2> restore.err
	status=$?
	[ $status -eq 66 ] && grep -q "missing the image of process" restore.err &&
		grep -q "$victim" restore.err || {
		echo "a set missing $victim: exit $status" >&2
		cat restore.err >&2
		exit 1
	}
	sed -i 's/^process \([0-9]*\) \([0-9]*\) /process \1 1 /' damaged/manifest
	"$build/bin/selfckpt-restore" damaged < /dev/null > /dev/null 2> restore.err
	status=$?
	[ $status -eq 65 ] && grep -q "checksum of the manifest" restore.err || {
		echo "a changed manifest: exit $status" >&2
		cat restore.err >&2
		exit 1
	}
	exit 0
	;;
*)
	echo "unknown job $what" >&2
	exit 2
	;;
esac

# Wait until the daemon, which its parents left behind, wrote its last line.
daemon_done() {
	i=0
	while ! grep -q '^done$' "$result" 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}

# The reference: an uninterrupted run.
"$@" < /dev/null > /dev/null 2>&1 || { echo "reference run failed" >&2; exit 1; }
[ "$what" = daemon ] && daemon_done
cp "$result" reference.txt
rm -f "$result" daemon.pid
[ "$what" = make ] && rm -rf proj && cp -r proj.clean proj

run_opts=
[ "$what" = exit ] && run_opts=--exit-after-save
[ "$what" = leaveout ] && run_opts=--leave-out-escaped
$run_in "$build/bin/selfckpt-run" $run_opts --dir images -- "$@" < /dev/null > /dev/null 2> run.err &
run=$!
# the random moment counts from when the job has its children (a loaded machine may take a
# while to start an interpreter); a daemon's first process leaves at once
if [ "$what" != daemon ]; then
	i=0
	while [ -z "$(cat /proc/"$run"/task/*/children 2>/dev/null)" ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
fi
sleep "$(moment)"
if [ "$what" = daemon ]; then
	i=0
	while [ ! -s daemon.pid ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	top=$(cat daemon.pid)
else
	top=$run
fi
kill -"$sig" "$top"
i=0
while [ ! -e images/latest ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
[ -e images/latest ] || { echo "no set after SIG$sig" >&2; cat run.err >&2; exit 1; }
if [ "$what" = leaveout ]; then
	grep -q "static_sleep').*left out of the checkpoint" run.err &&
		! grep -q static_sleep images/latest/manifest || {
		echo "the static child was not left out, named:" >&2
		cat run.err images/latest/manifest >&2
		exit 1
	}
fi
if [ "$what" = exit ]; then # every process ends once the set is written, nothing run past it
	wait "$run"
	status=$?
	[ $status -eq 75 ] || { echo "the job exited $status, not 75" >&2; cat run.err >&2; exit 1; }
	for p in $(awk '$1 == "process" { print $2 }' images/latest/manifest); do
		state=$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null)
		[ -z "$state" ] || [ "$state" = Z ] || {
			echo "process $p of the job still runs ($state)" >&2
			exit 1
		}
	done
fi
# kill -9 of the whole tree, as a node failure would
if [ "$what" = daemon ]; then # its parents are gone: a job of one process, one image
	[ -f images/latest ] || { echo "latest is not an image" >&2; ls -l images >&2; exit 1; }
	pids=$top
else
	[ -f images/latest/manifest ] || { echo "latest is not a set" >&2; ls -l images >&2; exit 1; }
	pids=$(awk '$1 == "process" { print $2 }' images/latest/manifest)
fi
kill -9 $pids "$run" 2>/dev/null
wait "$run" 2>/dev/null
sleep 0.2
cp -r "images/$(readlink images/latest)" set # a copy of the set and of the job's files as they are now
tar cf files.tar --exclude=images --exclude=set --exclude=files.tar . 2>/dev/null

for round in 1 2; do
	if [ $round = 2 ]; then # the same files again: the first restore changed them
		find . -mindepth 1 -maxdepth 1 ! -name images ! -name set ! -name files.tar \
			-exec rm -rf {} +
		tar xf files.tar
	fi
	# a restored job that hangs fails the test (killed: its pid namespace goes with it)
	timeout -s KILL 90 "$build/bin/selfckpt-restore" set < /dev/null > /dev/null 2> restore.err
	status=$?
	[ $status -eq 0 ] || { echo "restore $round exited $status" >&2; cat restore.err >&2; exit 1; }
	[ "$what" = daemon ] && daemon_done
	cmp -s "$result" reference.txt || {
		echo "restore $round: output differs from the uninterrupted run:" >&2
		diff "$result" reference.txt | head -20 >&2
		cat restore.err >&2
		exit 1
	}
done
exit 0
