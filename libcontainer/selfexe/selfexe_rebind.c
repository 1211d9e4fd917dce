#define _GNU_SOURCE
/* Guarding brig's file against CVE-2019-5736 without a second execve.
 *
 * What a container can reach is the process's mm->exe_file: that is what
 * /proc/PID/exe opens and what the kernel runs for `#!/proc/self/exe`. The
 * kernel lets a process point it at another file (PR_SET_MM_EXE_FILE, or
 * the exe_fd of PR_SET_MM_MAP) once no mapping of the old one is left. So
 * each segment of our image is swapped, in place, for the same bytes
 * reached through the read-only mount: read-only segments are mapped again
 * from the read-only file, and the writable one (relocated data, .data) is
 * copied into anonymous memory. Then the exe link is moved over. The
 * process is the same before and after, only its file is the read-only
 * one, as if it had been executed from there. On the 2-core development
 * host the move costs about 0.4 ms of a `brig run`, the execve it saves
 * cost about 0.7 ms (README "Performance").
 *
 * Any step that fails leaves a process that works as before (the remapped
 * bytes are the same bytes), and the caller re-executes instead. */
#include "selfexe/selfexe.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"

/* The linker's name for our own ELF header, where the first segment is
 * mapped: the image's layout is read from memory, not from a file. */
extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

struct self_image {
    const ElfW(Phdr) * phdr;
    size_t phnum;
    uintptr_t bias; /* load address minus link address */
    uintptr_t relro_start, relro_end;
    uintptr_t page;
};

static uintptr_t page_down(uintptr_t v, uintptr_t page)
{
    return v & ~(page - 1);
}

static uintptr_t page_up(uintptr_t v, uintptr_t page)
{
    return (v + page - 1) & ~(page - 1);
}

static int read_self_image(struct self_image *im, brig_error_t *err)
{
    const ElfW(Ehdr) *eh = &__ehdr_start;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_phentsize != sizeof(ElfW(Phdr)))
        return brig_error_set(err, ENOEXEC, "read brig's own ELF header");
    *im = (struct self_image){
        .phdr = (const ElfW(Phdr) *) ((const char *) eh + eh->e_phoff),
        .phnum = eh->e_phnum,
        .page = (uintptr_t) sysconf(_SC_PAGESIZE),
    };
    bool have_bias = false;
    for (size_t i = 0; i < im->phnum; i++) {
        const ElfW(Phdr) *ph = &im->phdr[i];
        if (ph->p_type == PT_LOAD && ph->p_offset == 0 && !have_bias) {
            im->bias = (uintptr_t) eh - ph->p_vaddr;
            have_bias = true;
        }
    }
    if (!have_bias)
        return brig_error_set(err, ENOEXEC, "find the segment that holds brig's ELF header");
    for (size_t i = 0; i < im->phnum; i++) {
        const ElfW(Phdr) *ph = &im->phdr[i];
        if (ph->p_type == PT_GNU_RELRO) {
            /* Rounded down at both ends, as the loader protects it. */
            im->relro_start = page_down(im->bias + ph->p_vaddr, im->page);
            im->relro_end = page_down(im->bias + ph->p_vaddr + ph->p_memsz, im->page);
        }
    }
    return 0;
}

static int segment_prot(const ElfW(Phdr) * ph)
{
    return ((ph->p_flags & PF_R) ? PROT_READ : 0) | ((ph->p_flags & PF_W) ? PROT_WRITE : 0)
           | ((ph->p_flags & PF_X) ? PROT_EXEC : 0);
}

/* A copy by hand: the writable segment holds the sanitizers' redzones
 * between globals, which their memcpy would report, and a library call
 * here could go through the very relocations being moved. */
__attribute__((no_sanitize_address)) static void copy_words(volatile uintptr_t *to,
                                                            const volatile uintptr_t *from,
                                                            size_t len)
{
    for (size_t i = 0; i < len / sizeof(uintptr_t); i++)
        to[i] = from[i];
}

/* The writable segment: its pages hold relocated pointers and live data,
 * so they are copied, and the copy is moved over the original in one
 * mremap. Signals are held so that no handler writes into the old pages
 * between the copy and the move. */
static int move_to_anonymous(const struct self_image *im, uintptr_t start, uintptr_t end, int prot,
                             brig_error_t *err)
{
    size_t len = end - start;
    void *copy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED)
        return brig_error_set(err, errno, "map memory for brig's data segment");
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    copy_words(copy, (const void *) start, len);
    /* One protection over the whole copy keeps it one mapping: mremap
     * moves only a single mapping on older kernels (before 6.17), and it
     * unmaps the target before it finds that out. */
    int rc = 0;
    if (prot != (PROT_READ | PROT_WRITE) && mprotect(copy, len, prot) < 0)
        rc = brig_error_set(err, errno, "protect the copy of brig's data segment");
    else if (mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *) start) == MAP_FAILED)
        rc = brig_error_set(err, errno, "move the copy of brig's data segment into place");
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (rc < 0) {
        munmap(copy, len);
        return rc;
    }
    uintptr_t rs = im->relro_start > start ? im->relro_start : start;
    uintptr_t re = im->relro_end < end ? im->relro_end : end;
    if (rs < re && mprotect((void *) rs, re - rs, PROT_READ) < 0)
        return brig_error_set(err, errno, "protect brig's relocated data again");
    return 0;
}

static int remap_image(const struct self_image *im, int fd, brig_error_t *err)
{
    for (size_t i = 0; i < im->phnum; i++) {
        const ElfW(Phdr) *ph = &im->phdr[i];
        if (ph->p_type != PT_LOAD || ph->p_filesz == 0)
            continue;
        uintptr_t start = page_down(im->bias + ph->p_vaddr, im->page);
        uintptr_t end = page_up(im->bias + ph->p_vaddr + ph->p_filesz, im->page);
        int prot = segment_prot(ph);
        if (ph->p_flags & PF_W) {
            if (move_to_anonymous(im, start, end, prot, err) < 0)
                return -1;
            continue;
        }
        /* Same file, same offset, same bytes: code that runs here goes on
         * running across the swap. */
        if (mmap((void *) start, end - start, prot, MAP_PRIVATE | MAP_FIXED, fd,
                 (off_t) page_down(ph->p_offset, im->page))
            == MAP_FAILED)
            return brig_error_set(err, errno, "map brig's segment %zu from the read-only file", i);
    }
    return 0;
}

/* PR_SET_MM_MAP rewrites every address the kernel keeps for the mm, so it
 * is given the ones in place: /proc/self/stat has them all but brk. */
static int current_mm_map(struct prctl_mm_map *map, brig_error_t *err)
{
    char buf[1024];
    cleanup_close int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, "open `/proc/self/stat`");
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n <= 0)
        return brig_error_set(err, n < 0 ? errno : EIO, "read `/proc/self/stat`");
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
        return brig_error_set(err, EINVAL, "parse `/proc/self/stat`");
    p += 4; /* field 4 onwards are numbers */
    unsigned long long field[52] = { 0 };
    for (int i = 4; i < 52; i++) {
        char *end;
        errno = 0;
        field[i] = strtoull(p, &end, 10);
        if (end == p || errno)
            return brig_error_set(err, EINVAL, "parse field %d of `/proc/self/stat`", i);
        p = end + (*end == ' ');
    }
    *map = (struct prctl_mm_map){
        .start_code = field[26],
        .end_code = field[27],
        .start_stack = field[28],
        .start_data = field[45],
        .end_data = field[46],
        .start_brk = field[47],
        .arg_start = field[48],
        .arg_end = field[49],
        .env_start = field[50],
        .env_end = field[51],
        .brk = (uint64_t) syscall(SYS_brk, 0),
        .exe_fd = (uint32_t) -1,
    };
    return 0;
}

static int set_exe_file(int fd, brig_error_t *err)
{
    /* The plain request wants CAP_SYS_RESOURCE; the map request, which
     * sets the same link, wants CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE
     * instead, and hosts that drop one often keep the other. */
    if (prctl(PR_SET_MM, PR_SET_MM_EXE_FILE, fd, 0, 0) == 0)
        return 0;
    if (errno != EPERM)
        return brig_error_set(err, errno, "point /proc/self/exe at the read-only file");
    struct prctl_mm_map map;
    if (current_mm_map(&map, err) < 0)
        return -1;
    map.exe_fd = (uint32_t) fd;
    if (prctl(PR_SET_MM, PR_SET_MM_MAP, &map, sizeof map, 0) < 0)
        return brig_error_set(err, errno, "point /proc/self/exe at the read-only file");
    return 0;
}

int brig_selfexe_rebind(int fd, brig_error_t *err)
{
    struct self_image im = { 0 };
    if (read_self_image(&im, err) < 0 || remap_image(&im, fd, err) < 0)
        return -1;
    return set_exe_file(fd, err);
}
