//! Giving free heap memory back to the kernel, where the allocator can.

/// Asks glibc's malloc to return the free memory of its heaps to the kernel:
/// not only the free space at the top of each heap, which malloc gives back
/// on its own, but whole free pages in the middle too. Returns whether any
/// memory was released. Built with `jemalloc` or `mimalloc`, the program's
/// heap is not glibc's, so this finds (almost) nothing to release there.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn release_free_memory() -> bool {
    // SAFETY: malloc_trim only walks the allocator's own free lists; it has
    // no preconditions and is safe to call from any thread at any time.
    unsafe { libc::malloc_trim(0) == 1 }
}

/// Other platforms and C libraries have no `malloc_trim`.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_free_memory() -> bool {
    false
}
