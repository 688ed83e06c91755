/* lab-iofs: a passthrough FUSE filesystem that can stall or fail I/O, for replica-chaos-lab.
 *
 *   lab-iofs BACKING CONTROL MOUNTPOINT [fuse options: -f -o ...]
 *
 * Every operation on MOUNTPOINT is done on the same path under BACKING (a directory the lab
 * moved the node's data directory to). Reads (read), writes (write, fallocate) and syncs
 * (fsync, fdatasync, fsync of a directory) can be delayed and failed; metadata operations
 * (open, create, rename, unlink, stat ...) never are.
 *
 * The faults are read from CONTROL, a small file of fixed layout (struct control below) that
 * the daemon maps shared at start and reads at every operation: no system call per operation
 * to learn them. The lab (runners/iofs.py) writes it with a sequence lock: `generation` is odd
 * while it writes, even when it is done; the daemon retries a read that saw an odd or changed
 * generation. The daemon counts in the same file, with atomic adds: operations per class,
 * those delayed and those failed.
 *
 * Files open with O_DIRECT are opened on BACKING without it (the buffers libfuse hands us are
 * not aligned). Every file is direct_io on our side (but those the server maps: file_flags),
 * so the kernel's page cache never holds them: each read or write of the server reaches this
 * daemon.
 * Created files and directories get the caller's owner (the daemon runs as root).
 *
 * Unsynced writes (`--unsynced RESULT`, `kill NODE losing unsynced writes`): the daemon keeps,
 * per file, its size at its last sync and the old content of every byte range below that
 * size that a write, a fallocate or a truncation changed since (an undo log, in memory). A
 * fsync or fdatasync of the file, or a write through a descriptor opened with O_SYNC/O_DSYNC,
 * forgets them: that is the file's new synced state. On SIGUSR1 (the lab sends it once the
 * server is dead) every file is put back as of its last sync: cut (or extended with zeros)
 * to its synced size, then the saved ranges written back newest first, so the oldest content
 * of each byte wins; the daemon then writes what it dropped to RESULT (JSON, replaced
 * atomically). What was never synced is lost, as after a power failure with a cache that
 * does not survive it. Creating, renaming and removing files is kept (metadata is not
 * tracked); a file removed since is skipped. O_DIRECT writes are not syncs.
 */
#define FUSE_USE_VERSION 314
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define CONTROL_MAGIC 0x464f494cu /* "LIOF" little-endian */
#define CONTROL_VERSION 1u
#define CLASSES 3 /* 0 reads, 1 writes, 2 syncs */

enum { C_READ = 0, C_WRITE = 1, C_SYNC = 2 };

/* The control file, 128 bytes; runners/iofs.py has the same layout (struct "<IIQ3IIi4x..."). */
struct control {
	uint32_t magic;
	uint32_t version;
	uint64_t generation; /* odd while the lab writes the fields below */
	uint32_t delay_us[CLASSES];
	uint32_t fail_mask; /* bit c: class c fails */
	int32_t fail_errno; /* 0: EIO */
	uint32_t pad;
	uint64_t ops[CLASSES]; /* counted by the daemon */
	uint64_t delayed[CLASSES];
	uint64_t failed[CLASSES];
	uint64_t reserved[2];
};

_Static_assert(sizeof(struct control) == 128, "control layout");
_Static_assert(offsetof(struct control, delay_us) == 16, "control layout");
_Static_assert(offsetof(struct control, ops) == 40, "control layout");

static struct control *ctl;
static int backing_fd = -1;

struct faults {
	uint32_t delay_us;
	int fail; /* an errno, 0: no failure */
};

static struct faults faults_of(int cls)
{
	struct faults f;
	for (;;) {
		uint64_t g1 = __atomic_load_n(&ctl->generation, __ATOMIC_ACQUIRE);
		if (g1 & 1) {
			sched_yield();
			continue;
		}
		uint32_t delay = __atomic_load_n(&ctl->delay_us[cls], __ATOMIC_RELAXED);
		uint32_t mask = __atomic_load_n(&ctl->fail_mask, __ATOMIC_RELAXED);
		int32_t err = __atomic_load_n(&ctl->fail_errno, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&ctl->generation, __ATOMIC_RELAXED) != g1)
			continue;
		f.delay_us = delay;
		f.fail = (mask >> cls) & 1 ? (err > 0 ? err : EIO) : 0;
		return f;
	}
}

/* The fault of one operation of class cls: sleeps the delay, then 0 or -errno. */
static int fault(int cls)
{
	struct faults f = faults_of(cls);
	__atomic_add_fetch(&ctl->ops[cls], 1, __ATOMIC_RELAXED);
	if (f.delay_us) {
		__atomic_add_fetch(&ctl->delayed[cls], 1, __ATOMIC_RELAXED);
		struct timespec ts = { f.delay_us / 1000000, (long)(f.delay_us % 1000000) * 1000 };
		while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
			;
	}
	if (f.fail) {
		__atomic_add_fetch(&ctl->failed[cls], 1, __ATOMIC_RELAXED);
		return -f.fail;
	}
	return 0;
}

/* --- unsynced writes --------------------------------------------------------------------- */

struct undo {
	off_t off;
	size_t len;
	char *old; /* the content before the change */
	struct undo *next; /* the one recorded before it */
};

struct tracked {
	dev_t dev;
	ino_t ino;
	int fd; /* our own descriptor (O_RDWR, no O_APPEND) to put it back */
	off_t synced_size;
	struct undo *undo; /* newest first */
	size_t undo_bytes;
	struct tracked *next;
};

static int track_unsynced; /* --unsynced given */
static const char *result_path;
static pthread_mutex_t track_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tracked *tracked_files;

static void forget_undo(struct tracked *t)
{
	struct undo *u = t->undo;
	while (u) {
		struct undo *next = u->next;
		free(u->old);
		free(u);
		u = next;
	}
	t->undo = NULL;
	t->undo_bytes = 0;
}

/* The tracking of the file open as fd (made at its first change: its size then is its synced
 * size, as it was when the lab mounted the directory or when the file was created). Called
 * with track_lock held. */
static struct tracked *tracking(int fd)
{
	struct stat st;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		return NULL;
	for (struct tracked *t = tracked_files; t; t = t->next)
		if (t->dev == st.st_dev && t->ino == st.st_ino)
			return t;
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	int own_fd = open(proc, O_RDWR | O_CLOEXEC);
	if (own_fd == -1)
		return NULL;
	struct tracked *t = calloc(1, sizeof *t);
	if (!t) {
		close(own_fd);
		return NULL;
	}
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	t->fd = own_fd;
	t->synced_size = st.st_size;
	t->next = tracked_files;
	tracked_files = t;
	return t;
}

/* Save the content of [off, off+len) below the synced size before it changes. */
static void save_range(struct tracked *t, off_t off, off_t len)
{
	if (!t || len <= 0 || off >= t->synced_size)
		return;
	if (off + len > t->synced_size)
		len = t->synced_size - off;
	struct undo *u = calloc(1, sizeof *u);
	char *old = malloc((size_t)len);
	if (!u || !old) {
		free(u);
		free(old);
		return;
	}
	ssize_t n = pread(t->fd, old, (size_t)len, off);
	if (n < 0)
		n = 0;
	if (n < len) /* beyond the current end (truncated since): zeros, as ftruncate extends */
		memset(old + n, 0, (size_t)(len - n));
	u->off = off;
	u->len = (size_t)len;
	u->old = old;
	u->next = t->undo;
	t->undo = u;
	t->undo_bytes += (size_t)len;
}

/* The file's current content is its synced state (fsync, fdatasync, an O_SYNC write). */
static void synced(int fd)
{
	pthread_mutex_lock(&track_lock);
	struct tracked *t = tracking(fd);
	if (t) {
		struct stat st;
		forget_undo(t);
		if (fstat(t->fd, &st) == 0)
			t->synced_size = st.st_size;
	}
	pthread_mutex_unlock(&track_lock);
}

/* Put every file back as of its last sync; what was dropped, as JSON, into result_path. */
static void drop_unsynced(void)
{
	unsigned long files = 0, restored = 0, entries = 0, skipped = 0;
	unsigned long long old_bytes = 0, cut_bytes = 0, grown_bytes = 0;
	pthread_mutex_lock(&track_lock);
	for (struct tracked *t = tracked_files; t; t = t->next) {
		struct stat st;
		if (fstat(t->fd, &st) == -1 || st.st_nlink == 0) {
			skipped++;
			forget_undo(t);
			continue;
		}
		files++;
		int changed = t->undo != NULL || st.st_size != t->synced_size;
		if (st.st_size > t->synced_size)
			cut_bytes += (unsigned long long)(st.st_size - t->synced_size);
		else if (st.st_size < t->synced_size)
			grown_bytes += (unsigned long long)(t->synced_size - st.st_size);
		if (st.st_size != t->synced_size && ftruncate(t->fd, t->synced_size) == -1)
			fprintf(stderr, "lab-iofs: restoring the size of inode %lu: %s\n",
				(unsigned long)t->ino, strerror(errno));
		for (struct undo *u = t->undo; u; u = u->next) { /* newest first: the oldest wins */
			if (pwrite(t->fd, u->old, u->len, u->off) != (ssize_t)u->len)
				fprintf(stderr, "lab-iofs: restoring inode %lu: %s\n",
					(unsigned long)t->ino, strerror(errno));
			entries++;
			old_bytes += u->len;
		}
		forget_undo(t);
		if (changed) {
			restored++;
			if (fsync(t->fd) == -1) { /* the restored state is what the backing disk has */
			}
		}
	}
	pthread_mutex_unlock(&track_lock);
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof tmp, "%s.tmp", result_path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f,
		"{\"files\": %lu, \"restored_files\": %lu, \"undo_entries\": %lu, "
		"\"old_bytes\": %llu, \"cut_bytes\": %llu, \"regrown_bytes\": %llu, "
		"\"skipped_removed\": %lu}\n",
		files, restored, entries, old_bytes, cut_bytes, grown_bytes, skipped);
	fclose(f);
	rename(tmp, result_path);
}

static void *drop_thread(void *arg)
{
	sigset_t *set = arg;
	for (;;) {
		int sig;
		if (sigwait(set, &sig) == 0 && sig == SIGUSR1)
			drop_unsynced();
	}
	return NULL;
}

/* A path of the mount as a path relative to the backing directory. */
static const char *rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

static void own(const char *path, int fd)
{
	struct fuse_context *c = fuse_get_context();
	if (fd >= 0) {
		if (fchown(fd, c->uid, c->gid) == -1) { /* best effort: the file exists */ }
	} else if (fchownat(backing_fd, rel(path), c->uid, c->gid, AT_SYMLINK_NOFOLLOW) == -1) {
	}
}

static void *iofs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	cfg->use_ino = 1;
	cfg->nullpath_ok = 1;
	/* Only this daemon changes the backing directory: the kernel may keep what it read. */
	cfg->kernel_cache = 1;
	cfg->entry_timeout = 1.0;
	cfg->attr_timeout = 1.0;
	cfg->negative_timeout = 0;
	return NULL;
}

static int iofs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	int r = fi ? fstat((int)fi->fh, st)
		   : fstatat(backing_fd, rel(path), st, AT_SYMLINK_NOFOLLOW);
	return r == -1 ? -errno : 0;
}

static int iofs_access(const char *path, int mask)
{
	return faccessat(backing_fd, rel(path), mask, 0) == -1 ? -errno : 0;
}

static int iofs_readlink(const char *path, char *buf, size_t size)
{
	ssize_t n = readlinkat(backing_fd, rel(path), buf, size - 1);
	if (n == -1)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int iofs_opendir(const char *path, struct fuse_file_info *fi)
{
	int fd = openat(backing_fd, rel(path), O_RDONLY | O_DIRECTORY);
	if (fd == -1)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		return -e;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	return 0;
}

static int iofs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t offset,
			struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)path;
	(void)offset;
	(void)flags;
	DIR *d = (DIR *)(uintptr_t)fi->fh;
	rewinddir(d);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		memset(&st, 0, sizeof st);
		st.st_ino = e->d_ino;
		st.st_mode = (mode_t)DTTOIF(e->d_type);
		if (filler(buf, e->d_name, &st, 0, 0))
			break;
	}
	return 0;
}

static int iofs_releasedir(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	closedir((DIR *)(uintptr_t)fi->fh);
	return 0;
}

static int iofs_mknod(const char *path, mode_t mode, dev_t rdev)
{
	if (mknodat(backing_fd, rel(path), mode, rdev) == -1)
		return -errno;
	own(path, -1);
	return 0;
}

static int iofs_mkdir(const char *path, mode_t mode)
{
	if (mkdirat(backing_fd, rel(path), mode) == -1)
		return -errno;
	own(path, -1);
	return 0;
}

static int iofs_unlink(const char *path)
{
	return unlinkat(backing_fd, rel(path), 0) == -1 ? -errno : 0;
}

static int iofs_rmdir(const char *path)
{
	return unlinkat(backing_fd, rel(path), AT_REMOVEDIR) == -1 ? -errno : 0;
}

static int iofs_symlink(const char *from, const char *to)
{
	if (symlinkat(from, backing_fd, rel(to)) == -1)
		return -errno;
	own(to, -1);
	return 0;
}

static int iofs_rename(const char *from, const char *to, unsigned int flags)
{
	int r = flags ? renameat2(backing_fd, rel(from), backing_fd, rel(to), flags)
		      : renameat(backing_fd, rel(from), backing_fd, rel(to));
	return r == -1 ? -errno : 0;
}

static int iofs_link(const char *from, const char *to)
{
	return linkat(backing_fd, rel(from), backing_fd, rel(to), 0) == -1 ? -errno : 0;
}

static int iofs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int r = fi ? fchmod((int)fi->fh, mode) : fchmodat(backing_fd, rel(path), mode, 0);
	return r == -1 ? -errno : 0;
}

static int iofs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	int r = fi ? fchown((int)fi->fh, uid, gid)
		   : fchownat(backing_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW);
	return r == -1 ? -errno : 0;
}

/* ftruncate, saving what a cut below the synced size removes (unsynced tracking). */
static int truncate_fd(int fd, off_t size)
{
	if (!track_unsynced)
		return ftruncate(fd, size) == -1 ? -errno : 0;
	pthread_mutex_lock(&track_lock);
	struct tracked *t = tracking(fd);
	struct stat st;
	if (t && fstat(fd, &st) == 0 && size < st.st_size)
		save_range(t, size, st.st_size - size);
	int r = ftruncate(fd, size) == -1 ? -errno : 0;
	pthread_mutex_unlock(&track_lock);
	return r;
}

static int iofs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	if (fi)
		return truncate_fd((int)fi->fh, size);
	int fd = openat(backing_fd, rel(path), O_WRONLY);
	if (fd == -1)
		return -errno;
	int r = truncate_fd(fd, size);
	close(fd);
	return r;
}

static int iofs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	int r = fi ? futimens((int)fi->fh, tv)
		   : utimensat(backing_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW);
	return r == -1 ? -errno : 0;
}

/* Every file is direct_io (O_DIRECT ones are opened without it on the backing side, see the
 * top): the kernel's page cache never holds them, each read and write reaches this daemon.
 * With the page cache, a binary log appended by the server while its dump thread read it
 * came back with bogus data now and then (replicas stopped on error 1236 'bogus data in log
 * event', 4 runs in 5 of a 25 s load, measured; 0 in 3 with direct_io). Files the server
 * maps into memory keep the cache: FUSE cannot map a direct_io file shared (Galera's
 * gcache, the binlog-less transaction coordinator log). */
static int mapped(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strncmp(base, "galera.cache", 12) == 0 || strcmp(base, "tc.log") == 0;
}

static void file_flags(const char *path, struct fuse_file_info *fi)
{
	if ((fi->flags & O_DIRECT) || !mapped(path)) {
		fi->direct_io = 1;
	} else {
		fi->keep_cache = 1;
	}
}

static int iofs_open(const char *path, struct fuse_file_info *fi)
{
	int fd = openat(backing_fd, rel(path), (fi->flags & ~O_DIRECT) | O_CLOEXEC);
	if (fd == -1)
		return -errno;
	fi->fh = (uint64_t)fd;
	file_flags(path, fi);
	return 0;
}

static int iofs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int fd = openat(backing_fd, rel(path), (fi->flags & ~O_DIRECT) | O_CREAT | O_CLOEXEC,
			mode);
	if (fd == -1)
		return -errno;
	own(path, fd);
	fi->fh = (uint64_t)fd;
	file_flags(path, fi);
	return 0;
}

static int iofs_read(const char *path, char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)path;
	int f = fault(C_READ);
	if (f)
		return f;
	ssize_t n = pread((int)fi->fh, buf, size, off);
	return n == -1 ? -errno : (int)n;
}

static int iofs_write(const char *path, const char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	(void)path;
	int f = fault(C_WRITE);
	if (f)
		return f;
	if (!track_unsynced) {
		ssize_t n = pwrite((int)fi->fh, buf, size, off);
		return n == -1 ? -errno : (int)n;
	}
	pthread_mutex_lock(&track_lock);
	struct tracked *t = tracking((int)fi->fh);
	if (t && (fi->flags & O_APPEND)) { /* appends land at the end, whatever off says */
		struct stat st;
		if (fstat((int)fi->fh, &st) == 0)
			off = st.st_size;
	}
	save_range(t, off, (off_t)size);
	ssize_t n = pwrite((int)fi->fh, buf, size, off);
	int e = errno;
	pthread_mutex_unlock(&track_lock);
	if (n != -1 && (fi->flags & O_DSYNC)) /* O_SYNC includes O_DSYNC: a synced write */
		synced((int)fi->fh);
	return n == -1 ? -e : (int)n;
}

static int iofs_statfs(const char *path, struct statvfs *st)
{
	(void)path;
	return fstatvfs(backing_fd, st) == -1 ? -errno : 0;
}

static int iofs_flush(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	return 0;
}

static int iofs_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	close((int)fi->fh);
	return 0;
}

static int iofs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	int f = fault(C_SYNC);
	if (f)
		return f;
	int r = datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh);
	if (r == -1)
		return -errno;
	if (track_unsynced)
		synced((int)fi->fh);
	return 0;
}

static int iofs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	(void)datasync;
	int f = fault(C_SYNC);
	if (f)
		return f;
	return fsync(dirfd((DIR *)(uintptr_t)fi->fh)) == -1 ? -errno : 0;
}

static int iofs_fallocate(const char *path, int mode, off_t off, off_t len,
			  struct fuse_file_info *fi)
{
	(void)path;
	int f = fault(C_WRITE);
	if (f)
		return f;
	if (!track_unsynced)
		return fallocate((int)fi->fh, mode, off, len) == -1 ? -errno : 0;
	pthread_mutex_lock(&track_lock);
	save_range(tracking((int)fi->fh), off, len); /* a punched hole or zeroed range */
	int r = fallocate((int)fi->fh, mode, off, len) == -1 ? -errno : 0;
	pthread_mutex_unlock(&track_lock);
	return r;
}

static int iofs_flock(const char *path, struct fuse_file_info *fi, int op)
{
	(void)path;
	return flock((int)fi->fh, op) == -1 ? -errno : 0;
}

static off_t iofs_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi)
{
	(void)path;
	off_t r = lseek((int)fi->fh, off, whence);
	return r == -1 ? -errno : r;
}

static const struct fuse_operations ops = {
	.init = iofs_init,
	.getattr = iofs_getattr,
	.access = iofs_access,
	.readlink = iofs_readlink,
	.opendir = iofs_opendir,
	.readdir = iofs_readdir,
	.releasedir = iofs_releasedir,
	.mknod = iofs_mknod,
	.mkdir = iofs_mkdir,
	.unlink = iofs_unlink,
	.rmdir = iofs_rmdir,
	.symlink = iofs_symlink,
	.rename = iofs_rename,
	.link = iofs_link,
	.chmod = iofs_chmod,
	.chown = iofs_chown,
	.truncate = iofs_truncate,
	.utimens = iofs_utimens,
	.open = iofs_open,
	.create = iofs_create,
	.read = iofs_read,
	.write = iofs_write,
	.statfs = iofs_statfs,
	.flush = iofs_flush,
	.release = iofs_release,
	.fsync = iofs_fsync,
	.fsyncdir = iofs_fsyncdir,
	.fallocate = iofs_fallocate,
	.flock = iofs_flock,
	.lseek = iofs_lseek,
};

static int usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s BACKING CONTROL MOUNTPOINT [--unsynced RESULT] [fuse options]\n"
		"  BACKING: the directory whose files the mount shows\n"
		"  CONTROL: the control file (128 bytes, written by the lab: runners/iofs.py)\n"
		"  --unsynced RESULT: keep what each file had at its last sync; SIGUSR1 puts\n"
		"    every file back to it and writes what was dropped to RESULT (JSON)\n",
		argv0);
	return 2;
}

int main(int argc, char *argv[])
{
	if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
		printf("lab-iofs 1.0 (control file version %u, libfuse %d.%d)\n", CONTROL_VERSION,
		       fuse_version() / 100, fuse_version() % 100);
		return 0;
	}
	if (argc < 4)
		return usage(argv[0]);
	backing_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (backing_fd == -1) {
		fprintf(stderr, "lab-iofs: backing directory %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	int cfd = open(argv[2], O_RDWR | O_CLOEXEC);
	if (cfd == -1) {
		fprintf(stderr, "lab-iofs: control file %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	void *m = mmap(NULL, sizeof(struct control), PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
	close(cfd);
	if (m == MAP_FAILED) {
		fprintf(stderr, "lab-iofs: mapping %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	ctl = m;
	if (ctl->magic != CONTROL_MAGIC || ctl->version != CONTROL_VERSION) {
		fprintf(stderr, "lab-iofs: %s is not a control file of version %u\n", argv[2],
			CONTROL_VERSION);
		return 1;
	}
	/* fuse_main sees: argv0 MOUNTPOINT [options] */
	char **fargv = calloc((size_t)argc, sizeof *fargv);
	if (!fargv)
		return 1;
	int fargc = 0;
	fargv[fargc++] = argv[0];
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--unsynced") == 0 && i + 1 < argc) {
			track_unsynced = 1;
			result_path = argv[++i];
			continue;
		}
		fargv[fargc++] = argv[i];
	}
	if (track_unsynced) { /* SIGUSR1 reaches only the thread that drops: block it first */
		static sigset_t set;
		pthread_t th;
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
		if (pthread_create(&th, NULL, drop_thread, &set) != 0) {
			fprintf(stderr, "lab-iofs: cannot start the thread that drops unsynced writes\n");
			return 1;
		}
		pthread_detach(th);
	}
	umask(0);
	return fuse_main(fargc, fargv, &ops, NULL);
}
