//! Signals as messages: signal sets, a thread's mask, ignoring a signal,
//! `signalfd` and its records, and `rt_tgsigqueueinfo` (a value queued to
//! one thread).
//!
//! Hand-written over libc: nix's `Signal` enum has no real-time signals
//! (and its `signalfd` reads one record per system call), and rustix
//! leaves signals to runtimes. Each call here is one system call.

use std::io;
use std::mem::{size_of, size_of_val, zeroed};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr;

use crate::check;

/// The `n`th real-time signal (`SIGRTMIN + n`).
///
/// # Panics
/// When that is past `SIGRTMAX` (a caller's bug).
pub fn rt(n: i32) -> i32 {
    let s = libc::SIGRTMIN() + n;
    assert!(
        n >= 0 && s <= libc::SIGRTMAX(),
        "SIGRTMIN+{n} does not exist"
    );
    s
}

/// A set of signals.
#[derive(Clone, Copy)]
pub struct SigSet(libc::sigset_t);

impl std::fmt::Debug for SigSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let members: Vec<i32> = (1..=libc::SIGRTMAX())
            .filter(|&s| self.contains(s))
            .collect();
        f.debug_tuple("SigSet").field(&members).finish()
    }
}

impl SigSet {
    /// The empty set.
    pub fn empty() -> SigSet {
        // SAFETY: sigset_t is plain data; sigemptyset initialises it.
        let mut set: libc::sigset_t = unsafe { zeroed() };
        // SAFETY: set is a valid sigset_t.
        unsafe { libc::sigemptyset(&mut set) };
        SigSet(set)
    }

    /// The set holding `sig` alone.
    pub fn of(sig: i32) -> SigSet {
        let mut s = SigSet::empty();
        s.add(sig);
        s
    }

    /// Adds `sig` (an invalid number is ignored).
    pub fn add(&mut self, sig: i32) {
        // SAFETY: self.0 is an initialised sigset_t; sigaddset checks sig.
        unsafe { libc::sigaddset(&mut self.0, sig) };
    }

    /// True when `sig` is in the set.
    pub fn contains(&self, sig: i32) -> bool {
        // SAFETY: self.0 is an initialised sigset_t; sigismember checks sig.
        unsafe { libc::sigismember(&self.0, sig) == 1 }
    }
}

/// Blocks the signals of `set` in the calling thread (adding them to its
/// mask; threads it creates afterwards inherit them).
pub fn block_in_thread(set: &SigSet) -> io::Result<()> {
    // SAFETY: set is a valid signal set; the old mask is not asked for.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set.0, ptr::null_mut()) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// The calling thread's signal mask.
pub fn thread_mask() -> io::Result<SigSet> {
    let mut old = SigSet::empty();
    // SAFETY: a null new set only reads the mask into old, a valid set.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, ptr::null(), &mut old.0) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(old)
}

/// Sets the disposition of `sig` to *ignore* if it is still the default;
/// returns whether it did. A handler or an ignore already installed is
/// left alone. (The kernel never ignores a *blocked* signal: threads that
/// block it still receive it through a signalfd.)
pub fn ignore_if_default(sig: i32) -> io::Result<bool> {
    // SAFETY: sigaction is plain data; all-zero is valid.
    let mut old: libc::sigaction = unsafe { zeroed() };
    // SAFETY: a null new action only reads the current one into old.
    check(unsafe { libc::sigaction(sig, ptr::null(), &mut old) })?;
    if old.sa_sigaction != libc::SIG_DFL {
        return Ok(false);
    }
    // SAFETY: as above.
    let mut act: libc::sigaction = unsafe { zeroed() };
    act.sa_sigaction = libc::SIG_IGN;
    // SAFETY: act is a valid action that ignores the signal (no handler
    // runs); the old one is not asked for.
    check(unsafe { libc::sigaction(sig, &act, ptr::null_mut()) })?;
    Ok(true)
}

/// The handler [`install_interrupter`] installs: it does nothing, its only
/// effect is that the system call it lands in returns `EINTR`.
extern "C" fn interrupt_only(_sig: libc::c_int) {}

/// Makes `sig` an *interrupter*: a handler that does nothing, installed
/// without `SA_RESTART`, so the signal sent to a thread blocked in an
/// interruptible system call makes that call fail with `EINTR` (instead of
/// killing the process or being discarded). Installed only over the
/// default disposition; returns whether `sig` is an interrupter now
/// (`false` when someone else handles or ignores it).
pub fn install_interrupter(sig: i32) -> io::Result<bool> {
    let ours = interrupt_only as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: sigaction is plain data; all-zero is valid.
    let mut old: libc::sigaction = unsafe { zeroed() };
    // SAFETY: a null new action only reads the current one into old.
    check(unsafe { libc::sigaction(sig, ptr::null(), &mut old) })?;
    if old.sa_sigaction == ours {
        return Ok(true);
    }
    if old.sa_sigaction != libc::SIG_DFL {
        return Ok(false);
    }
    // SAFETY: as above.
    let mut act: libc::sigaction = unsafe { zeroed() };
    act.sa_sigaction = ours;
    // SAFETY: act is a valid action: a handler that touches nothing (so it
    // is async-signal-safe), an empty mask, no flags (no SA_RESTART); the
    // old one is not asked for.
    check(unsafe { libc::sigaction(sig, &act, ptr::null_mut()) })?;
    Ok(true)
}

/// A non-blocking, close-on-exec signalfd for the signals of `set`; reads
/// report the signals pending for the *reading* thread (and its process).
pub fn signalfd(set: &SigSet) -> io::Result<OwnedFd> {
    // SAFETY: set is a valid signal set; -1 asks for a new descriptor.
    let fd = check(unsafe { libc::signalfd(-1, &set.0, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) })?;
    // SAFETY: fd was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// One record read from a signalfd.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct SigInfo(libc::signalfd_siginfo);

impl Default for SigInfo {
    fn default() -> SigInfo {
        // SAFETY: signalfd_siginfo is plain data; all-zero is valid.
        SigInfo(unsafe { zeroed() })
    }
}

impl std::fmt::Debug for SigInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigInfo")
            .field("signo", &self.signo())
            .field("code", &self.0.ssi_code)
            .field("pid", &self.pid())
            .field("value", &self.value())
            .finish()
    }
}

impl SigInfo {
    /// The signal number.
    #[inline]
    pub fn signo(&self) -> i32 {
        self.0.ssi_signo as i32
    }

    /// True when the signal was queued with a value (`SI_QUEUE`, as
    /// [`queue_to_thread`] does).
    #[inline]
    pub fn is_queued(&self) -> bool {
        self.0.ssi_code == libc::SI_QUEUE
    }

    /// The sending process (for queued and `kill` signals).
    #[inline]
    pub fn pid(&self) -> i32 {
        self.0.ssi_pid as i32
    }

    /// The value a queued signal carries.
    #[inline]
    pub fn value(&self) -> u64 {
        self.0.ssi_ptr
    }
}

/// Reads the signals pending for the calling thread on signalfd `fd` into
/// `out` with one `read`, without blocking; returns how many records came
/// (0 when none is pending, or on `EINTR`).
#[inline]
pub fn read_siginfo(fd: BorrowedFd<'_>, out: &mut [SigInfo]) -> io::Result<usize> {
    // SAFETY: out is valid for writes of size_of_val(out) bytes, whole
    // signalfd_siginfo records (SigInfo is transparent over one), any bits
    // of which are valid.
    let r = unsafe {
        libc::read(
            fd.as_raw_fd(),
            out.as_mut_ptr() as *mut libc::c_void,
            size_of_val(out),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
            _ => Err(e),
        };
    }
    Ok(r as usize / size_of::<SigInfo>())
}

/// The `siginfo_t` of a queued signal (`SI_QUEUE` layout on Linux).
#[repr(C)]
struct QueueInfo {
    signo: i32,
    errno: i32,
    code: i32,
    _pad: i32,
    pid: i32,
    uid: u32,
    value: u64,
    _rest: [u64; 12],
}

const _: () = assert!(size_of::<QueueInfo>() == 128);

/// Queues `sig` with `value` to thread `tid` of process `pid`
/// (`rt_tgsigqueueinfo`, sent as `SI_QUEUE` from this process and user).
/// `ESRCH` when no such thread lives in that process; `EAGAIN` when the
/// receiver's queue of pending signals is full.
#[inline]
pub fn queue_to_thread(pid: i32, tid: i32, sig: i32, value: u64) -> io::Result<()> {
    let info = QueueInfo {
        signo: sig,
        errno: 0,
        code: libc::SI_QUEUE,
        _pad: 0,
        pid: crate::process::pid().as_raw_nonzero().get(),
        uid: crate::ids::uid(),
        value,
        _rest: [0; 12],
    };
    // SAFETY: info is a 128-byte siginfo_t with the SI_QUEUE layout, valid
    // for reads for the duration of the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            pid,
            tid,
            sig,
            &info as *const QueueInfo,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Waits up to `timeout` for a signal of `set` (sigtimedwait; the set
/// should be blocked in the calling thread) and takes it: its number.
/// `EAGAIN` when none came in time, `EINTR` when another signal
/// interrupted the wait. (nix and rustix do not wrap sigtimedwait.)
#[inline]
pub fn timed_wait(set: &SigSet, timeout: std::time::Duration) -> io::Result<i32> {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: set and ts are valid for the call; no siginfo is asked for.
    check(unsafe { libc::sigtimedwait(&set.0, ptr::null_mut(), &ts) })
}

/// Sends `sig` to thread `tid` of this process (tgkill, what
/// `pthread_kill` does). `ESRCH` when no such thread lives here.
#[inline]
pub fn send_to_thread(tid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: tgkill takes plain integers and touches no memory of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_tgkill,
            crate::process::pid().as_raw_nonzero().get(),
            tid,
            sig as libc::c_long,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn send_to_thread_is_taken_by_timed_wait() {
        std::thread::spawn(|| {
            let sig = rt(7);
            let set = SigSet::of(sig);
            block_in_thread(&set).unwrap();
            let short = std::time::Duration::from_millis(1);
            assert_eq!(
                timed_wait(&set, short).unwrap_err().raw_os_error(),
                Some(libc::EAGAIN)
            );
            send_to_thread(crate::thread::gettid(), sig).unwrap();
            assert_eq!(
                timed_wait(&set, std::time::Duration::from_secs(5)).unwrap(),
                sig
            );
        })
        .join()
        .unwrap();
    }

    #[test]
    fn send_to_thread_refuses_an_unknown_thread() {
        assert_eq!(
            send_to_thread(i32::MAX, 0).unwrap_err().raw_os_error(),
            Some(libc::ESRCH)
        );
    }
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_value_queued_to_this_thread_is_read_back_from_a_signalfd() {
        // Run in a fresh thread: the mask it blocks dies with it.
        std::thread::spawn(|| {
            let sig = rt(7);
            let set = SigSet::of(sig);
            assert!(set.contains(sig) && !set.contains(rt(6)));
            block_in_thread(&set).unwrap();
            assert!(thread_mask().unwrap().contains(sig));
            let fd = signalfd(&set).unwrap();
            let mut infos = [SigInfo::default(); 4];
            assert_eq!(read_siginfo(fd.as_fd(), &mut infos).unwrap(), 0);
            queue_to_thread(
                crate::process::pid().as_raw_nonzero().get(),
                crate::thread::gettid(),
                sig,
                42,
            )
            .unwrap();
            queue_to_thread(
                crate::process::pid().as_raw_nonzero().get(),
                crate::thread::gettid(),
                sig,
                43,
            )
            .unwrap();
            assert_eq!(read_siginfo(fd.as_fd(), &mut infos).unwrap(), 2);
            let i = infos[0];
            assert!(i.is_queued());
            assert_eq!(
                (i.signo(), i.pid(), i.value()),
                (sig, crate::process::pid().as_raw_nonzero().get(), 42)
            );
            assert_eq!(infos[1].value(), 43);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn an_interrupter_ends_a_blocked_call_with_eintr() {
        let sig = rt(10);
        assert!(install_interrupter(sig).unwrap());
        assert!(
            install_interrupter(sig).unwrap(),
            "ours already: still true"
        );
        assert!(ignore_if_default(rt(11)).unwrap());
        assert!(!install_interrupter(rt(11)).unwrap(), "ignored: not ours");
        let (r, _w) = crate::pipe::pipe().unwrap();
        let (tid_tx, tid) = std::sync::mpsc::channel();
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            tid_tx.send(crate::thread::gettid()).unwrap();
            let mut b = [0u8; 1];
            // SAFETY: b is valid for 1 byte; r is an open descriptor.
            let n = unsafe { libc::read(r.as_raw_fd(), b.as_mut_ptr().cast(), 1) };
            let _ = done_tx.send((n, io::Error::last_os_error().raw_os_error()));
        });
        let tid = tid.recv().unwrap();
        // Until it lands inside the read (a signal before it only runs the
        // handler).
        let got = loop {
            send_to_thread(tid, sig).unwrap();
            if let Ok(got) = done.recv_timeout(std::time::Duration::from_millis(20)) {
                break got;
            }
        };
        assert_eq!(got, (-1, Some(libc::EINTR)));
    }

    #[test]
    fn a_missing_thread_is_esrch_and_ignore_applies_once() {
        let e = queue_to_thread(
            crate::process::pid().as_raw_nonzero().get(),
            i32::MAX - 1,
            rt(8),
            0,
        )
        .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ESRCH));
        assert!(ignore_if_default(rt(9)).unwrap());
        assert!(!ignore_if_default(rt(9)).unwrap());
    }
}
