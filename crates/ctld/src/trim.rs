//! Gives the memory a burst of requests freed back to the system.
//!
//! glibc's allocator keeps freed memory for reuse: after 100,000
//! submissions (request frames, journal records, accounting records) or a
//! listing of 100,000 jobs (the answer built, encoded and dropped) the
//! controller's RSS stays two to three times its live heap. Once requests
//! have stopped for a quarter of a second, `malloc_trim` returns the free
//! pages (also those between live blocks) to the kernel. It runs once per
//! quiet spell, off the async workers, and never while requests flow.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Requests read so far (any kind).
static REQUESTS: AtomicU64 = AtomicU64::new(0);

/// How long without a request counts as quiet.
const QUIET: Duration = Duration::from_millis(250);

/// Counts one request (or another burst of work: a batch of accounting
/// records written).
pub(crate) fn note_request() {
    REQUESTS.fetch_add(1, Ordering::Relaxed);
}

/// Starts the task that trims after each burst.
pub(crate) fn spawn() {
    tokio::spawn(async {
        let mut seen = REQUESTS.load(Ordering::Relaxed);
        // The first quiet spell trims even without a request: recovery
        // (decoding a snapshot of 100,000 jobs, each with its own copy of
        // a description until the copies are pooled) leaves as much free
        // memory behind as a burst does.
        let mut trimmed_at = u64::MAX;
        loop {
            tokio::time::sleep(QUIET).await;
            let now = REQUESTS.load(Ordering::Relaxed);
            if now == seen && now != trimmed_at {
                trimmed_at = now;
                let _ = tokio::task::spawn_blocking(release).await;
            }
            seen = now;
        }
    });
}

/// Makes every thread allocate from one glibc arena. By default each
/// thread that allocates gets its own (up to 8 per core), so a job's
/// description is decoded in one arena, its record built in another, and
/// the holes the freed request buffers leave are spread over all of them:
/// with 100,000 held jobs the controller's RSS was 1.4 to 1.9 times its
/// live heap (936-1,290 B per job, at most 724 B live), against 1.2
/// times with one arena (732-754 B; docs/performance-history.md). Per-thread caches (tcache) still serve
/// most small allocations without the arena's lock. To be called before
/// the runtime starts its threads.
pub(crate) fn one_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes no pointers; M_ARENA_MAX only bounds how many
    // arenas glibc creates from now on.
    unsafe {
        nix::libc::mallopt(nix::libc::M_ARENA_MAX, 1);
    }
}

/// Returns free heap pages to the kernel.
fn release() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers and only works on the
    // allocator's own free lists, under its own locks.
    unsafe {
        nix::libc::malloc_trim(0);
    }
}
