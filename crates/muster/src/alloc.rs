//! The binary's allocator: glibc's malloc, except in `muster sim`, which
//! switches to mimalloc (`use_mimalloc`) before it reads its trace.
//!
//! The daemons keep glibc's: the controller's memory is measured and
//! trimmed with it (`ctld::trim`: `malloc_trim`, one arena), and under
//! mimalloc it held twice the memory after 100,000 held jobs and a
//! restart (docs/performance-history.md, twenty-seventh session). The simulator,
//! which allocates and frees job records, requests and plans at every
//! event of a trace, runs faster on mimalloc. The switch happens once the
//! process has already allocated with glibc, so a block is freed (or
//! grown) by the allocator whose heap holds it (`mi_is_in_heap_region`),
//! whichever allocates now.

use libmimalloc_sys as mi;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether new blocks come from mimalloc. Set once, never cleared.
static MIMALLOC: AtomicBool = AtomicBool::new(false);

/// mimalloc's `mi_option_purge_delay`, which the binding does not name:
/// the option before `mi_option_use_numa_nodes` in `mi_option_e` (15 in
/// mimalloc 2 and 3).
const PURGE_DELAY: mi::mi_option_t = mi::mi_option_use_numa_nodes - 1;

/// From now on new blocks come from mimalloc, which keeps the memory
/// freed (no purge back to the system 10 ms after: a simulation frees and
/// allocates again at once, and every page purged was faulted and zeroed
/// again; the whole RICC-2010-2 spent 7 % of its time there).
pub fn use_mimalloc() {
    // SAFETY: sets one of mimalloc's global options.
    unsafe { mi::mi_option_set(PURGE_DELAY, -1) };
    MIMALLOC.store(true, Ordering::Relaxed);
}

/// No transparent huge pages for this process from now on (Linux,
/// `PR_SET_THP_DISABLE`): with them each first touch of a fresh 2 MiB
/// region zeroes all of it, and mimalloc touches its fresh segments a
/// page here and there. `muster sim --policy fcfs|easy`'s own loop
/// (`sim::fast`) runs in a few hundredths of a second on KTH-SP2, of which
/// that zeroing was four fifths (perf: `clear_page_erms` under
/// `mi_page_free_list_extend`). A failure changes nothing but the speed.
pub fn no_huge_pages() {
    // SAFETY: a prctl that only sets a flag of this process.
    let _ = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
}

/// glibc's malloc, or mimalloc after `use_mimalloc`.
pub struct Switch;

fn mimalloc_now() -> bool {
    MIMALLOC.load(Ordering::Relaxed)
}

/// Whether mimalloc holds `p`: never before the switch.
fn from_mimalloc(p: *mut u8) -> bool {
    // SAFETY: a look-up in mimalloc's map of its own regions, for any
    // address.
    mimalloc_now() && unsafe { mi::mi_is_in_heap_region(p.cast()) }
}

// SAFETY: each block is allocated by one of the two allocators, with the
// layout asked for, and freed or grown by the one whose heap holds it.
unsafe impl GlobalAlloc for Switch {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        unsafe {
            if mimalloc_now() {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            } else {
                System.alloc(layout)
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        unsafe {
            if mimalloc_now() {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            } else {
                System.alloc_zeroed(layout)
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator with `layout`; it goes
        // back to the heap that holds it.
        unsafe {
            if from_mimalloc(ptr) {
                mi::mi_free(ptr.cast());
            } else {
                System.dealloc(ptr, layout);
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `dealloc`; a block from before the switch is copied
        // (its `layout.size()` bytes, at most `new_size`) into a new one
        // from mimalloc and given back to glibc.
        unsafe {
            if from_mimalloc(ptr) {
                return mi::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast();
            }
            if !mimalloc_now() {
                return System.realloc(ptr, layout, new_size);
            }
            let new: *mut u8 = mi::mi_malloc_aligned(new_size, layout.align()).cast();
            if !new.is_null() {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                System.dealloc(ptr, layout);
            }
            new
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks from before the switch are freed and grown by glibc's heap,
    /// those after it by mimalloc's, whichever way they are reached.
    #[test]
    fn blocks_from_both_sides_of_the_switch_are_freed_and_grown() {
        let before: Vec<u64> = (0..1000).collect();
        let mut grown: Vec<u8> = vec![7; 100];
        use_mimalloc();
        // SAFETY: reads one of mimalloc's global options.
        assert_eq!(unsafe { mi::mi_option_get(PURGE_DELAY) }, -1);
        let after: Vec<u64> = (0..1000).collect();
        assert!(from_mimalloc(after.as_ptr() as *mut u8));
        assert!(!from_mimalloc(before.as_ptr() as *mut u8));
        grown.resize(1 << 20, 9);
        assert!(from_mimalloc(grown.as_mut_ptr()));
        assert_eq!((grown[99], grown[100]), (7, 9));
        assert_eq!(before, after);
        drop(before);
        drop(after);
        drop(grown);
    }
}
