//! Thread priority: background work that must not take the cores from
//! the work it backs (a reduction's replicas beside the reduction).

/// The highest nice value: such a thread gets about 1.5% of a core that
/// a thread of the default priority wants, and all of an idle one.
const LOWEST: libc::c_int = 19;

/// Lowers the calling thread (not its process) to the lowest priority
/// that still runs: the scheduler runs it when the cores have nothing
/// else, and a little otherwise. Ignored where refused.
pub fn lowest() {
    // SAFETY: gettid takes no argument and cannot fail.
    let tid = unsafe { libc::gettid() };
    // SAFETY: setpriority on this thread's own id (Linux keeps a nice
    // value per thread); it only changes the scheduler's weight.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, LOWEST);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_calling_thread_is_lowered() {
        // SAFETY: getpriority on the process (its main thread here);
        // errno is not consulted.
        let before = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        std::thread::spawn(|| {
            super::lowest();
            // SAFETY: as above, for this thread's id.
            let mine =
                unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
            assert_eq!(mine, super::LOWEST);
        })
        .join()
        .unwrap();
        // SAFETY: as above.
        assert_eq!(unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }, before);
    }
}
