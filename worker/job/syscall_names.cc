// The system call table (see syscall_names.h).
#include "worker/job/syscall_names.h"

#include <sys/syscall.h>

#include <algorithm>
#include <iterator>

namespace podrun::agent {
namespace {

struct SyscallEntry {
  long number;
  const char* name;
};

// Only the calls this architecture has (each guarded by its SYS_ macro).
constexpr SyscallEntry kSyscalls[] = {
#ifdef SYS_futex
    {SYS_futex, "futex"},
#endif
#ifdef SYS_futex_waitv
    {SYS_futex_waitv, "futex_waitv"},
#endif
#ifdef SYS_read
    {SYS_read, "read"},
#endif
#ifdef SYS_write
    {SYS_write, "write"},
#endif
#ifdef SYS_pread64
    {SYS_pread64, "pread64"},
#endif
#ifdef SYS_pwrite64
    {SYS_pwrite64, "pwrite64"},
#endif
#ifdef SYS_readv
    {SYS_readv, "readv"},
#endif
#ifdef SYS_writev
    {SYS_writev, "writev"},
#endif
#ifdef SYS_preadv
    {SYS_preadv, "preadv"},
#endif
#ifdef SYS_pwritev
    {SYS_pwritev, "pwritev"},
#endif
#ifdef SYS_poll
    {SYS_poll, "poll"},
#endif
#ifdef SYS_ppoll
    {SYS_ppoll, "ppoll"},
#endif
#ifdef SYS_select
    {SYS_select, "select"},
#endif
#ifdef SYS_pselect6
    {SYS_pselect6, "pselect6"},
#endif
#ifdef SYS_epoll_wait
    {SYS_epoll_wait, "epoll_wait"},
#endif
#ifdef SYS_epoll_pwait
    {SYS_epoll_pwait, "epoll_pwait"},
#endif
#ifdef SYS_epoll_pwait2
    {SYS_epoll_pwait2, "epoll_pwait2"},
#endif
#ifdef SYS_nanosleep
    {SYS_nanosleep, "nanosleep"},
#endif
#ifdef SYS_clock_nanosleep
    {SYS_clock_nanosleep, "clock_nanosleep"},
#endif
#ifdef SYS_wait4
    {SYS_wait4, "wait4"},
#endif
#ifdef SYS_waitid
    {SYS_waitid, "waitid"},
#endif
#ifdef SYS_accept
    {SYS_accept, "accept"},
#endif
#ifdef SYS_accept4
    {SYS_accept4, "accept4"},
#endif
#ifdef SYS_recvfrom
    {SYS_recvfrom, "recvfrom"},
#endif
#ifdef SYS_recvmsg
    {SYS_recvmsg, "recvmsg"},
#endif
#ifdef SYS_recvmmsg
    {SYS_recvmmsg, "recvmmsg"},
#endif
#ifdef SYS_sendto
    {SYS_sendto, "sendto"},
#endif
#ifdef SYS_sendmsg
    {SYS_sendmsg, "sendmsg"},
#endif
#ifdef SYS_sendmmsg
    {SYS_sendmmsg, "sendmmsg"},
#endif
#ifdef SYS_connect
    {SYS_connect, "connect"},
#endif
#ifdef SYS_ioctl
    {SYS_ioctl, "ioctl"},
#endif
#ifdef SYS_open
    {SYS_open, "open"},
#endif
#ifdef SYS_openat
    {SYS_openat, "openat"},
#endif
#ifdef SYS_openat2
    {SYS_openat2, "openat2"},
#endif
#ifdef SYS_close
    {SYS_close, "close"},
#endif
#ifdef SYS_fsync
    {SYS_fsync, "fsync"},
#endif
#ifdef SYS_fdatasync
    {SYS_fdatasync, "fdatasync"},
#endif
#ifdef SYS_sync_file_range
    {SYS_sync_file_range, "sync_file_range"},
#endif
#ifdef SYS_msync
    {SYS_msync, "msync"},
#endif
#ifdef SYS_flock
    {SYS_flock, "flock"},
#endif
#ifdef SYS_fcntl
    {SYS_fcntl, "fcntl"},
#endif
#ifdef SYS_pause
    {SYS_pause, "pause"},
#endif
#ifdef SYS_rt_sigsuspend
    {SYS_rt_sigsuspend, "rt_sigsuspend"},
#endif
#ifdef SYS_rt_sigtimedwait
    {SYS_rt_sigtimedwait, "rt_sigtimedwait"},
#endif
#ifdef SYS_sched_yield
    {SYS_sched_yield, "sched_yield"},
#endif
#ifdef SYS_io_uring_enter
    {SYS_io_uring_enter, "io_uring_enter"},
#endif
#ifdef SYS_io_getevents
    {SYS_io_getevents, "io_getevents"},
#endif
#ifdef SYS_io_pgetevents
    {SYS_io_pgetevents, "io_pgetevents"},
#endif
#ifdef SYS_splice
    {SYS_splice, "splice"},
#endif
#ifdef SYS_sendfile
    {SYS_sendfile, "sendfile"},
#endif
#ifdef SYS_semop
    {SYS_semop, "semop"},
#endif
#ifdef SYS_semtimedop
    {SYS_semtimedop, "semtimedop"},
#endif
#ifdef SYS_msgrcv
    {SYS_msgrcv, "msgrcv"},
#endif
#ifdef SYS_msgsnd
    {SYS_msgsnd, "msgsnd"},
#endif
#ifdef SYS_mq_timedreceive
    {SYS_mq_timedreceive, "mq_timedreceive"},
#endif
#ifdef SYS_mq_timedsend
    {SYS_mq_timedsend, "mq_timedsend"},
#endif
#ifdef SYS_getrandom
    {SYS_getrandom, "getrandom"},
#endif
#ifdef SYS_mmap
    {SYS_mmap, "mmap"},
#endif
#ifdef SYS_munmap
    {SYS_munmap, "munmap"},
#endif
#ifdef SYS_mprotect
    {SYS_mprotect, "mprotect"},
#endif
#ifdef SYS_madvise
    {SYS_madvise, "madvise"},
#endif
#ifdef SYS_brk
    {SYS_brk, "brk"},
#endif
#ifdef SYS_clone
    {SYS_clone, "clone"},
#endif
#ifdef SYS_clone3
    {SYS_clone3, "clone3"},
#endif
#ifdef SYS_execve
    {SYS_execve, "execve"},
#endif
#ifdef SYS_exit_group
    {SYS_exit_group, "exit_group"},
#endif
#ifdef SYS_lseek
    {SYS_lseek, "lseek"},
#endif
#ifdef SYS_stat
    {SYS_stat, "stat"},
#endif
#ifdef SYS_fstat
    {SYS_fstat, "fstat"},
#endif
#ifdef SYS_newfstatat
    {SYS_newfstatat, "newfstatat"},
#endif
#ifdef SYS_statx
    {SYS_statx, "statx"},
#endif
#ifdef SYS_getdents64
    {SYS_getdents64, "getdents64"},
#endif
#ifdef SYS_unlink
    {SYS_unlink, "unlink"},
#endif
#ifdef SYS_unlinkat
    {SYS_unlinkat, "unlinkat"},
#endif
#ifdef SYS_rename
    {SYS_rename, "rename"},
#endif
#ifdef SYS_renameat2
    {SYS_renameat2, "renameat2"},
#endif
#ifdef SYS_mkdir
    {SYS_mkdir, "mkdir"},
#endif
#ifdef SYS_mkdirat
    {SYS_mkdirat, "mkdirat"},
#endif
#ifdef SYS_copy_file_range
    {SYS_copy_file_range, "copy_file_range"},
#endif
#ifdef SYS_fallocate
    {SYS_fallocate, "fallocate"},
#endif
#ifdef SYS_ftruncate
    {SYS_ftruncate, "ftruncate"},
#endif
#ifdef SYS_userfaultfd
    {SYS_userfaultfd, "userfaultfd"},
#endif
#ifdef SYS_membarrier
    {SYS_membarrier, "membarrier"},
#endif
};

}  // namespace

std::string SyscallName(long number) {
  const auto it = std::find_if(std::begin(kSyscalls), std::end(kSyscalls),
                               [&](const SyscallEntry& e) { return e.number == number; });
  if (it != std::end(kSyscalls)) return it->name;
  return "#" + std::to_string(number);
}

}  // namespace podrun::agent
